#!/usr/bin/env bash
# Packs what the GPU machine lacks for the tests and the peer benchmarks into .peers/ (git-ignored): the cp312
# wheels of the exported packages' runtime (apache-tvm-ffi), the dispatch documents' schema checks (jsonschema),
# cloudpickle, pytest-xdist (the GPU tests compile on the machine's 16 cores at once) and the peers (quack-kernels, flash-attn-4), unpacked and xz-compressed into one 3-4 MB tarball,
# small enough to travel beside .devpkg. On the GPU machine: `source .peers/env.sh` (CuTe DSL, then the tarball
# unpacked onto PYTHONPATH). See benchmarks/NOTES.md, "Running the GPU tests and benchmarks on the lent H200".
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.peers/' .git/info/exclude 2>/dev/null || echo /.peers/ >> .git/info/exclude
WHEELS=(apache-tvm-ffi==0.1.15.post2 quack-kernels==0.6.5 flash-attn-4==4.0.0b36 cloudpickle==3.1.3
        jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 attrs==26.1.0
        rpds-py==2026.9.1 typing_extensions==4.16.0 pytest-xdist==3.8.0 execnet==2.1.1)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$scratch/wheels" "${WHEELS[@]}"
mkdir -p "$scratch/site" .peers
for wheel in "$scratch"/wheels/*.whl; do python3 -m zipfile -e "$wheel" "$scratch/site"; done
tar -C "$scratch/site" -cf - . | xz -T0 > .peers/peers.tar.xz
cat > .peers/env.sh <<'ENV'
source .devpkg/setup.sh >/dev/null
mkdir -p /tmp/site && tar -xJf .peers/peers.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PYTHONPATH
export PYTHONUNBUFFERED=1
ENV
du -h .peers/peers.tar.xz
