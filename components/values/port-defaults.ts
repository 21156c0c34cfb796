// The ports the config defaults to: the schema takes them, the port table (components/config/ports.ts)
// builds every firewall from them.

/** The Aztec sequencer's fixed ports: P2P (TCP+UDP), JSON-RPC, admin (never opened). */
export const AZTEC_PORTS = { p2p: 40400, rpc: 8080, admin: 8880 } as const;

/** The storage node's default ports (each can be set in its config). */
export const STORAGE_PORTS = { p2p: 1234, rpc: 5678, adminRpc: 5679, grpc: 50051 } as const;
