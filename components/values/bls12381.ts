/**
 * The public key of a BLS12-381 secret key as CometBFT's bls12_381 keys serialize it (BeaconKit's
 * beacond, the open core of 0G's 0gchaind): sk·G1, 96 bytes uncompressed (x || y, big-endian). Only
 * what checking a priv_validator_key.json needs: no signing, no hashing to the curve.
 */

const P = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaabn;
/** The order of G1: a secret key is a scalar in [1, R). */
export const BLS_ORDER = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001n;
const G1 = {
    x: 0x17f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bbn,
    y: 0x08b3f481e3aaa0f1a09e30ed741d8ae4fcf5e095d5d00af600db18cb2c04b3edd03cc744a2888ae40caa232946c5e7e1n,
};

type Jacobian = { x: bigint; y: bigint; z: bigint };
const INFINITY: Jacobian = { x: 1n, y: 1n, z: 0n };
const mod = (a: bigint) => ((a % P) + P) % P;

function pow(base: bigint, exp: bigint): bigint {
    let result = 1n;
    let b = mod(base);
    for (let e = exp; e > 0n; e >>= 1n) {
        if (e & 1n) result = (result * b) % P;
        b = (b * b) % P;
    }
    return result;
}

// y^2 = x^3 + 4 (a = 0): doubling dbl-2009-l, addition add-2007-bl.
function double(q: Jacobian): Jacobian {
    if (q.z === 0n || q.y === 0n) return INFINITY;
    const a = mod(q.x * q.x),
        b = mod(q.y * q.y),
        c = mod(b * b);
    const d = mod(2n * (mod((q.x + b) * (q.x + b)) - a - c));
    const e = mod(3n * a),
        f = mod(e * e);
    const x = mod(f - 2n * d);
    return { x, y: mod(e * (d - x) - 8n * c), z: mod(2n * q.y * q.z) };
}

function add(p: Jacobian, q: Jacobian): Jacobian {
    if (p.z === 0n) return q;
    if (q.z === 0n) return p;
    const z1z1 = mod(p.z * p.z),
        z2z2 = mod(q.z * q.z);
    const u1 = mod(p.x * z2z2),
        u2 = mod(q.x * z1z1);
    const s1 = mod(p.y * q.z * z2z2),
        s2 = mod(q.y * p.z * z1z1);
    const h = mod(u2 - u1),
        r = mod(2n * (s2 - s1));
    if (h === 0n) return r === 0n ? double(p) : INFINITY;
    const i = mod(4n * h * h),
        j = mod(h * i),
        v = mod(u1 * i);
    const x = mod(r * r - j - 2n * v);
    return { x, y: mod(r * (v - x) - 2n * s1 * j), z: mod((mod((p.z + q.z) * (p.z + q.z)) - z1z1 - z2z2) * h) };
}

/** sk·G1 serialized uncompressed (96 bytes), for a secret key given as 32 big-endian bytes in [1, R). */
export function blsPublicKey(secret: Buffer): Buffer {
    const k = BigInt(`0x${secret.toString("hex") || "0"}`);
    if (secret.length !== 32 || k === 0n || k >= BLS_ORDER)
        throw new Error("a BLS12-381 secret key is 32 big-endian bytes of a scalar in [1, r)");
    let acc = INFINITY;
    for (let i = BigInt(k.toString(2).length - 1); i >= 0n; i--) {
        acc = double(acc);
        if ((k >> i) & 1n) acc = add(acc, { ...G1, z: 1n });
    }
    const zi = pow(acc.z, P - 2n),
        zi2 = mod(zi * zi);
    const hex48 = (n: bigint) => n.toString(16).padStart(96, "0");
    return Buffer.from(hex48(mod(acc.x * zi2)) + hex48(mod(acc.y * zi2 * zi)), "hex");
}
