// The SSH connection every remote step of a host uses: the one type the host modules share.
import type * as command from "@pulumi/command";

export type Connection = command.types.input.remote.ConnectionArgs;
