// Where nodefleet keeps things on every host, whatever its roles: the host tools' directory and a
// node's data directory under the host's data mount.

/** Where the host tools (hostfiles/) are installed on every host. */
export const HOST_LIB = "/usr/local/lib/nodefleet";

export function nodeDataDir(mount: string, nodeName: string): string {
    return `${mount.replace(/\/$/, "")}/${nodeName}`;
}
