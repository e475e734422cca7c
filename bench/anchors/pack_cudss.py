#!/usr/bin/env python3
"""pack_cudss.py -- makes NVIDIA cuDSS (PyPI nvidia-cudss-cu13) small enough to carry to the
GPU machine for bench/suite's cuDSS anchor, by keeping only the device code one GPU
architecture needs (default sm_90: H100/H200).

libcudss.so.1 of the wheel is ~167 MB, ~143 MB even under xz -9: almost all of it is the
.nv_fatbin section, one fatbin container per CUDA translation unit, each holding an ELF cubin
for every architecture (sm_75 .. sm_120) and a PTX for sm_100, each already compressed.  The
script parses the containers and overwrites with zeros the payload of every entry the target
architecture will never load, keeping every size, header and offset as it was (nothing in the
ELF moves, so the library is the same file to the loader and to the CUDA driver, which picks
the sm_90 cubin on an H100 and never reads the others).  Zeros compress away: the result,
xz-compressed, is ~17 MB.

Fatbin layout (little-endian; as CUDA 12/13 write it, cf. cuobjdump and gpuocelot/cricket):
  container header, 16 bytes: u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size
      of the entries that follow
  entry header (header size bytes, >= 32): u16 kind (1 PTX, 2 ELF cubin), u16 flags/version,
      u32 header size, u64 payload size, u32 compressed size, u32 -, u16 minor, u16 major,
      u32 arch (90 = sm_90), ...; the payload follows the header.
Rule per container: if it has an ELF cubin of the target arch, every other entry is zeroed;
else the highest PTX with arch <= target is kept (the driver JIT-compiles it) and the rest
zeroed; a container with neither is left untouched (it cannot run on the target either way).

usage: bench/anchors/pack_cudss.py [--arch 90] [--wheel FILE.whl | --lib libcudss.so.1]
                                   [--version 1.0.0.35] [--out .cudss]
  Without --wheel/--lib it runs `pip download nvidia-cudss-cu13==VERSION` (no deps) into a
  temporary folder.  Writes OUT/libcudss.so.1.xz and OUT/MANIFEST.txt (source, sha256 of the
  original and of the pruned library, what was zeroed).  OUT (.cudss/ of the repository
  root by default) must be git-ignored: /.cudss/ in .git/info/exclude.
On the GPU machine (bench/run_suite.sh does it when SAP_CUDSS_LIB is unset):
  xz -dc .cudss/libcudss.so.1.xz > /tmp/cudss/libcudss.so.1
  SAP_CUDSS_LIB=/tmp/cudss/libcudss.so.1 bench/run_suite.sh ...
Python 3 standard library only.
"""
import argparse
import hashlib
import lzma
import os
import struct
import subprocess
import sys
import tempfile
import zipfile

MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2


def find_section(b, want):
    """(offset, size) of the ELF64 section named want."""
    if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
        raise SystemExit("pack_cudss: not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)

    def sh(i):
        return struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize)

    stroff = sh(shstrndx)[4]
    for i in range(shnum):
        s = sh(i)
        name = bytes(b[stroff + s[0]:b.index(0, stroff + s[0])]).decode()
        if name == want:
            return s[4], s[5]
    raise SystemExit("pack_cudss: no %s section" % want)


def parse_containers(b, off, size):
    """Yields (container offset, [(kind, arch, payload offset, payload size), ...])."""
    o, end_sec = off, off + size
    while o + 16 <= end_sec:
        magic, _ver, hsize, fsize = struct.unpack_from("<IHHQ", b, o)
        if magic != MAGIC:  # padding between containers (8-byte aligned)
            o += 8
            continue
        e, end = o + hsize, o + hsize + fsize
        if end > end_sec:
            raise SystemExit("pack_cudss: fatbin container at 0x%x runs past the section" % o)
        entries = []
        while e < end:
            kind, _f, ehs, psz = struct.unpack_from("<HHIQ", b, e)
            arch, = struct.unpack_from("<I", b, e + 28)
            if ehs < 32 or e + ehs + psz > end:
                raise SystemExit("pack_cudss: bad fatbin entry at 0x%x" % e)
            entries.append((kind, arch, e + ehs, psz))
            e += ehs + psz
        yield o, entries
        o = end


def prune(b, arch):
    off, size = find_section(b, ".nv_fatbin")
    stats = {"containers": 0, "kept_elf": 0, "kept_ptx": 0, "untouched": 0, "zeroed_entries": 0,
             "zeroed_bytes": 0}
    for _o, entries in parse_containers(b, off, size):
        stats["containers"] += 1
        keep = [i for i, (k, a, _p, _n) in enumerate(entries) if k == KIND_ELF and a == arch]
        if keep:
            keep = keep[:1]
            stats["kept_elf"] += 1
        else:
            ptx = [(a, i) for i, (k, a, _p, _n) in enumerate(entries) if k == KIND_PTX and a <= arch]
            if not ptx:
                stats["untouched"] += 1
                continue
            keep = [max(ptx)[1]]
            stats["kept_ptx"] += 1
        for i, (_k, _a, p, n) in enumerate(entries):
            if i in keep:
                continue
            b[p:p + n] = bytes(n)
            stats["zeroed_entries"] += 1
            stats["zeroed_bytes"] += n
    if stats["containers"] == 0:
        raise SystemExit("pack_cudss: no fatbin container found")
    return stats


def fetch_wheel(version, tmp):
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
           "-d", tmp, "nvidia-cudss-cu13==" + version]
    print("pack_cudss:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    whl = [f for f in os.listdir(tmp) if f.endswith(".whl")]
    if not whl:
        raise SystemExit("pack_cudss: pip downloaded no wheel")
    return os.path.join(tmp, whl[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--wheel")
    ap.add_argument("--lib")
    ap.add_argument("--version", default="1.0.0.35")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".cudss"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if a.lib:
            src = a.lib
            data = bytearray(open(a.lib, "rb").read())
        else:
            whl = a.wheel or fetch_wheel(a.version, tmp)
            src = os.path.basename(whl)
            with zipfile.ZipFile(whl) as z:
                names = [n for n in z.namelist() if n.endswith("/libcudss.so.1")]
                if not names:
                    raise SystemExit("pack_cudss: no libcudss.so.1 in " + whl)
                data = bytearray(z.read(names[0]))
    sha_in = hashlib.sha256(data).hexdigest()
    st = prune(data, a.arch)
    sha_out = hashlib.sha256(data).hexdigest()
    os.makedirs(a.out, exist_ok=True)
    dst = os.path.join(a.out, "libcudss.so.1.xz")
    filters = [{"id": lzma.FILTER_X86},
               {"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME, "dict_size": 192 << 20}]
    print("pack_cudss: compressing %d bytes (a minute or two)" % len(data), flush=True)
    with open(dst, "wb") as f:
        f.write(lzma.compress(bytes(data), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, filters=filters))
    with open(os.path.join(a.out, "MANIFEST.txt"), "w") as f:
        f.write("source: %s\narch kept: sm_%d\nsha256 original: %s\nsha256 pruned: %s\n" % (src, a.arch, sha_in, sha_out))
        f.write("".join("%s: %d\n" % kv for kv in st.items()))
    print("pack_cudss: %s: %d bytes; %s" % (dst, os.path.getsize(dst), st))


if __name__ == "__main__":
    main()
