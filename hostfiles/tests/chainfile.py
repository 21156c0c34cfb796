"""Synthetic chain exports for trim_export.py's tests and benchmark (test/bench/bench_trim.py): RLP encoding and blocks
shaped like geth's export ([header with >= 15 fields, transactions, uncles]). Not installed on
hosts; trim_export.py itself needs nothing but the standard library."""


def rlp(value):
    if isinstance(value, list):
        payload = b"".join(rlp(v) for v in value)
        return _length(len(payload), 0xC0) + payload
    if isinstance(value, int):
        value = value.to_bytes((value.bit_length() + 7) // 8, "big") if value else b""
    if len(value) == 1 and value[0] < 0x80:
        return value
    return _length(len(value), 0x80) + value


def _length(n, offset):
    if n < 56:
        return bytes([offset + n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([offset + 55 + len(b)]) + b


def block(number, difficulty=0, extra=b"", txs=0, tx_size=100):
    header = [b"\x01" * 32, b"\x02" * 32, b"\x03" * 20, b"\x04" * 32, b"\x05" * 32, b"\x06" * 32, b"\x00" * 256,
              difficulty, number, 30_000_000, 21_000 * txs, 1_700_000_000 + number, extra, b"\x07" * 32, b"\x00" * 8, 7]
    return rlp([header, [bytes([0xAA]) * tx_size for _ in range(txs)], []])
