#!/usr/bin/env bash
# One round of the GPU steps that benchmarks/NOTES.md lists as next ("Next GPU steps"), in that order, each under a
# time cap so the round ends inside one device command, every log and JSON under $OUT (default: ./gpu-round).
#
#   bash benchmarks/gpu_round.sh gemm       # each pick by M beside its rivals (#34-#39), their GPU test, the profiles,
#                                           # the package on the four large problems beside torch.mm and quack,
#                                           # with the sub-tiled epilogue's fourth stage (#37) beside its pick
#   bash benchmarks/gpu_round.sh attention  # the tuned attention package on every issue shape, the full GPU tests
#   BUDGET=540 RUN=2 bash benchmarks/gpu_round.sh gemm
#   DTYPE=fp16 bash benchmarks/gpu_round.sh gemm between-calls   # the steps that take one dtype, in fp16 (bf16)
#   bash benchmarks/gpu_round.sh gemm large # only the steps whose name holds "large" (a round that did not fit one call)
#   bash benchmarks/gpu_round.sh gemm m320 m384 large   # the steps whose name holds any of these
#   OUT=$OUT/g PACK=1 bash benchmarks/gpu_round.sh gemm dispatch   # on the device: one file, $OUT/g.tgz, comes back
#
# Run from the repository root on the GPU machine after `bash benchmarks/pack_device_wheels.sh` here (it sets up
# CuTe DSL and the peers there through .peers/env.sh). A step that would start with under 30 s of BUDGET left is
# skipped and says so; the table each benchmark prints comes last in its log.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} != gemm && ${1:-} != attention ]]; then
  echo "usage: bash benchmarks/gpu_round.sh gemm|attention [STEP ...]  (BUDGET=seconds, RUN=n, OUT=folder)" >&2
  exit 2
fi
source .peers/env.sh
OUT=${OUT:-gpu-round}
mkdir -p "$OUT"
BUDGET=${BUDGET:-560}
RUN=${RUN:-1}
ONLY=("${@:2}")
started=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - started) )); }

# step NAME CAP COMMAND...: runs COMMAND under min(CAP, what is left), its output in $OUT/NAME.log
step() {
  local name=$1 cap=$2; shift 2
  if (( ${#ONLY[@]} )); then
    local want hit=0
    for want in "${ONLY[@]}"; do [[ $name == *"$want"* ]] && hit=1; done
    (( hit )) || return 0
  fi
  local budget; budget=$(left)
  if (( budget < 30 )); then echo "== $name: skipped, ${budget} s left"; return; fi
  (( cap > budget )) && cap=$budget
  echo "== $name (cap ${cap} s)"
  timeout "$cap" "$@" 2>&1 | grep --line-buffered -v "Warn\|_try_probe\|_raise_if_unsafe\|head-loop-overlap" | tee "$OUT/$name.log" | tail -16
  echo "== $name done at $(( $(date +%s) - started )) s"
}

nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTEST=(python3 -m pytest -m gpu -p no:cacheprovider -o addopts="" -q)
# the GPU tests spend most of their time compiling: eight at once on the machine's cores (one GPU serves them all)
python3 -c "import xdist" 2>/dev/null && PYTEST+=(-n 8)
case $1 in
  gemm)
    # programmatic dependent launch's GPU tests (pdl=True: a chain of calls, each reading the one before's C)
    step gemm-pdl-tests 150 "${PYTEST[@]}" tests/test_gpu_gemm_pdl.py
    # the package's own call beside torch.mm back to back, from a CUDA graph, alone after an L2 flush, and the
    # profiler's records of the alone call (trace-alone: the kernel's duration after the flush and the gap from the
    # spin's end to its start); M = 320 was 0.91-0.96x alone until its rule took five stages in row order (#42, #43)
    step "gemm-between-calls-run$RUN" 200 python3 benchmarks/gemm_between_calls.py --dtypes "${DTYPE:-bf16}" \
      --shapes 256,8192,8192 320,8192,8192 384,8192,8192 --json "$OUT/gemm-between-calls-run$RUN.json"
    # M = 320's candidates, each a package of its own, beside the package and torch.mm in every mode
    step "gemm-m320-designs-run$RUN" 220 python3 benchmarks/gemm_between_calls.py --dtypes "${DTYPE:-bf16}" \
      --shapes 320,8192,8192 --design swap_128x160_aliased --design swap_128x160_single \
      --design coop_128x192_aliased --design swap_128x192_aliased --json "$OUT/gemm-m320-designs-run$RUN.json"
    # the persistent swap_128x160_single ran 4-6 us shorter than the six-stage pick alone after the flush: the pick
    # (five stages) beside it, the pick with its C in bytes of its own, and the six-stage pick (#42)
    step "gemm-m320-alone-why-run$RUN" 200 python3 benchmarks/gemm_between_calls.py --dtypes "${DTYPE:-bf16}" \
      --shapes 320,8192,8192 --design swap_128x160_single --design swap_128x160_dedicated \
      --design swap_128x160_aliased_6 --json "$OUT/gemm-m320-alone-why-run$RUN.json"
    # the pick's five stages beside six and four
    step "gemm-m320-stages-run$RUN" 150 python3 benchmarks/gemm_between_calls.py --dtypes "${DTYPE:-bf16}" \
      --shapes 320,8192,8192 --design swap_128x160_aliased_6 --design swap_128x160_aliased_4 \
      --json "$OUT/gemm-m320-stages-run$RUN.json"
    # M = 320's block order: the pick (row order, the blocks sharing a weight tile side by side, NOTES #43) beside the
    # grouped order and cuBLAS's kernel there (pairs, 5 stages)
    step "gemm-m320-order-run$RUN" 150 python3 benchmarks/gemm_between_calls.py --dtypes "${DTYPE:-bf16}" \
      --shapes 320,8192,8192 --design swap_128x160_grouped --design swap_128x160_pairs_5 \
      --json "$OUT/gemm-m320-order-run$RUN.json"
    # M = 320 alone after an L2 flush (the weights from HBM, an L2 of dirty lines; 0.91-0.96x torch.mm before #42):
    # Nsight Compute on that launch, beside cuBLAS's, with M = 256 to compare
    for m in 320 256; do
      step "gemm-m$m-cold-stalls" 150 env OUT="$OUT/stalls-m$m-cold" bash benchmarks/stall_reasons.sh gemm \
        --gemm "$m,8192,8192" --dirty-l2
    done
    step gemm-one-tile-tests 150 "${PYTEST[@]}" tests/test_gpu_gemm.py -k "one_tile or subtiled"
    for candidates in "64 swap_64x64_aliased swap_64x64_13" "128 decode_aliased" "192 swap_64x192_aliased" \
                      "256 pairs_aliased pingpong_128x128_pairs" "320 swap_128x160_aliased swap_128x160_subtiles" "384 coop_128x192 swap_128x192_aliased"; do
      set -- $candidates
      m=$1; shift
      variants=(); for name in "$@"; do variants+=(--variant "$name"); done
      step "gemm-m$m-run$RUN" 90 python3 benchmarks/gemm.py --tuned --no-package --dtypes fp16 bf16 \
        --repeats 5 --shapes "$m,8192,8192" "${variants[@]}" --json "$OUT/gemm-m$m-run$RUN.json"
    done
    # M = 256 on the H200, 0.97x torch.mm there and level on the H100: the kernel cuBLAS runs on this card, then the
    # pick beside its persistent form, the sub-tiled epilogue, the per-warp release and the pairs
    step m256-peer-kernels 90 python3 benchmarks/peer_kernels.py --dtypes fp16 bf16 --ms 256 320 384 \
      --json "$OUT/m256-peer-kernels.json"
    step "gemm-m256-candidates-run$RUN" 200 python3 benchmarks/gemm.py --tuned --no-package --dtypes fp16 bf16 \
      --repeats 5 --shapes 256,8192,8192 --variant tile_128_single --variant tile_128_subtiles \
      --variant tile_128_warp_release --variant pairs_aliased --json "$OUT/gemm-m256-candidates-run$RUN.json"
    step gemm-profiles 180 python3 benchmarks/profile_kernels.py --out "$OUT/profiles" --only gemm_sm90_m256 gemm_sm90_m320 gemm_sm90_m384
    # the package (its K rule takes 4096^3) beside torch.mm and quack's best on the four large problems
    step "gemm-large-run$RUN" 240 python3 benchmarks/gemm.py --tuned --peer quack --dtypes bf16 fp16 --repeats 5 \
      --shapes 4096,4096,4096 8192,8192,8192 8192,28672,4096 16384,4096,14336 --json "$OUT/gemm-large-run$RUN.json"
    # the grouped block order's group: 8 rows of 128 x 256 tiles a column put 82 MB of operands through the 50 MB L2
    # in one wave at 8192^3, 16 rows 65 MB. Timed beside quack (the variant in rounds of its own: +-5% apart), then
    # as a package of its own beside the default's in the same rounds: 0.96-1.04x, about +0.5% (NOTES #44: not taken)
    step "gemm-raster-group-run$RUN" 300 python3 benchmarks/gemm.py --tuned --peer quack --dtypes bf16 fp16 \
      --repeats 5 --variant raster_group=16 --shapes 8192,8192,8192 16384,4096,14336 4096,4096,4096 \
      8192,28672,4096 --json "$OUT/gemm-raster-group-run$RUN.json"
    step "gemm-raster-group-rounds-run$RUN" 200 python3 benchmarks/gemm_between_calls.py --dtypes bf16 fp16 \
      --shapes 8192,8192,8192 16384,4096,14336 8192,28672,4096 4096,4096,4096 --design raster_group_16 \
      --json "$OUT/gemm-raster-group-rounds-run$RUN.json"
    # a 256 x 192 cooperative tile with the register split (quack's 256 x 208 leads fp16 by 2-5% at (16384, 4096,
    # 14336) and (8192, 28672, 4096), NOTES #45): its GPU tests, then beside quack, then as a package beside
    # the default's in the same rounds
    step gemm-wide-coop-tests 200 "${PYTEST[@]}" tests/test_gpu_gemm.py -k register_split
    step "gemm-wide-coop-run$RUN" 300 python3 benchmarks/gemm.py --tuned --peer quack --dtypes fp16 bf16 \
      --repeats 5 --variant coop_256x192 --shapes 16384,4096,14336 8192,28672,4096 8192,8192,8192 4096,4096,4096 \
      --json "$OUT/gemm-wide-coop-run$RUN.json"
    step "gemm-wide-coop-rounds-run$RUN" 200 python3 benchmarks/gemm_between_calls.py --dtypes fp16 bf16 \
      --shapes 16384,4096,14336 8192,28672,4096 8192,8192,8192 4096,4096,4096 --design coop_256x192 \
      --json "$OUT/gemm-wide-coop-rounds-run$RUN.json"
    # the same tile in pairs of blocks sharing each B tile by multicast, as quack's 256 x 208 runs (2x1), beside it
    step "gemm-wide-coop-pairs-run$RUN" 150 python3 benchmarks/gemm.py --tuned --no-package --dtypes fp16 bf16 \
      --repeats 4 --variant coop_256x192 --variant tile_m=256,tile_n=192,stages=3,epilogue=subtiles,cluster_m=2 \
      --shapes 8192,28672,4096 16384,4096,14336 8192,8192,8192 --json "$OUT/gemm-wide-coop-pairs-run$RUN.json"
    # the abort at exit after torch.profiler's modes (2 of 7 runs with them, 0 of 6 without: pytorch/pytorch#195207):
    # the script now ends without the interpreter's teardown when they ran; five runs with them, each to exit 0
    step gemm-exit-abort 200 bash -c 'for i in 1 2 3 4 5; do python3 benchmarks/gemm_between_calls.py --dtypes bf16 \
        --shapes 320,8192,8192 --repeats 2 --modes trace trace-alone >/dev/null 2>&1; echo "run $i exit $?"; done'
    # where the sub-tiled epilogue's fourth stage pays (#37: +2-11% at 4096^3, -2 to -7% at 8192^3 fp16): the Ms
    # between the small-M picks and the large shapes, at K = 4096 and 8192, beside the default the package picks there
    step "gemm-subtiles-range-run$RUN" 240 python3 benchmarks/gemm.py --tuned --no-package --dtypes bf16 fp16 \
      --repeats 4 --variant subtiles --shapes 512,8192,8192 1024,8192,8192 2048,8192,8192 1024,4096,4096 \
      2048,4096,4096 8192,4096,4096 --json "$OUT/gemm-subtiles-range-run$RUN.json"
    # is it K or N that makes the fourth stage pay (every winning shape of #37 had N = K = 4096)? each swapped
    step "gemm-subtiles-nk-run$RUN" 150 python3 benchmarks/gemm.py --tuned --no-package --dtypes bf16 fp16 \
      --repeats 4 --variant subtiles --shapes 2048,8192,4096 2048,4096,8192 4096,8192,4096 4096,4096,8192 \
      --json "$OUT/gemm-subtiles-nk-run$RUN.json"
    # the dispatch's package (every range's pick, both sides of every bound), then its own call beside torch.mm at
    # each small M, and beside quack's best where quack comes close (M = 256-512)
    step gemm-dispatch-tests 180 "${PYTEST[@]}" tests/test_gpu_gemm_dispatch.py
    step "gemm-package-small-m-run$RUN" 150 python3 benchmarks/gemm.py --tuned --dtypes fp16 bf16 --repeats 5 \
      --shapes 64,8192,8192 128,8192,8192 192,8192,8192 256,8192,8192 320,8192,8192 384,8192,8192 512,8192,8192 \
      --json "$OUT/gemm-package-small-m-run$RUN.json"
    step "gemm-package-quack-run$RUN" 200 python3 benchmarks/gemm.py --tuned --peer quack --dtypes fp16 bf16 \
      --repeats 5 --shapes 256,8192,8192 384,8192,8192 512,8192,8192 --json "$OUT/gemm-package-quack-run$RUN.json"
    # and the other Ms of the issue's targets beside quack's best (its swapped 128 x 128 ping-pong leads there)
    step "gemm-quack-small-m-run$RUN" 150 python3 benchmarks/gemm.py --tuned --peer quack --dtypes fp16 bf16 \
      --repeats 5 --shapes 64,8192,8192 128,8192,8192 192,8192,8192 320,8192,8192 \
      --json "$OUT/gemm-quack-small-m-run$RUN.json"
    # quack's best from both kinds of config where either may lead (320-512: its swapped 128 x 128 ping-pong, timed
    # only up to M = 256 before, and its large tiles; all five since quack_configs took both kinds up to M = 512)
    step "gemm-quack-both-kinds-run$RUN" 300 python3 benchmarks/gemm.py --tuned --peer quack --dtypes fp16 bf16 \
      --repeats 4 --shapes 320,8192,8192 384,8192,8192 512,8192,8192 \
      --json "$OUT/gemm-quack-both-kinds-run$RUN.json"
    ;;
  attention)
    step attention-tests 300 "${PYTEST[@]}" tests/test_gpu_attention.py
    # A33 and A34, beside the default in the same rounds: the warpgroup's own chain sets the trip's pace (the
    # default's timeline), and these shorten it: O rescaled under the Q K^T wgmma instead of after the wait for P V
    # (A33, ~32 ns of a 1.65 us trip), and every k-th exp2 of the loop's softmax on the FMA pipe instead of MUFU
    # (A34: MUFU computes 16 a clock an SM, the softmax's 64 a thread take ~512 of its ~1,270 cycles)
    step attention-softmax-units-tests 200 "${PYTEST[@]}" tests/test_gpu_attention.py -k "rescale_under_qk or poly_exp2"
    step "attention-softmax-units-run$RUN" 260 python3 benchmarks/attention.py --dtypes bf16 --head-dims 128 64 \
      --causal no --peer fa4 --repeats 4 --no-package --variant rescale_under_qk=True --variant poly_exp2=2 \
      --variant poly_exp2=3 --variant poly_exp2=4 --variant poly_exp2=3,rescale_under_qk=True \
      --shapes 4,4096,32 4,8192,32 --json "$OUT/attention-softmax-units-run$RUN.json"
    # the same causal (A34's moved exp2s there also select 0 for a masked score: ~9 instructions each, not 8)
    step "attention-softmax-units-causal-run$RUN" 200 python3 benchmarks/attention.py --dtypes bf16 \
      --head-dims 128 64 --causal yes --peer fa4 --repeats 4 --no-package --variant rescale_under_qk=True \
      --variant poly_exp2=3 --shapes 4,2048,32 4,4096,32 --json "$OUT/attention-softmax-units-causal-run$RUN.json"
    # A35: per_warp_release again after A32: ptxas places the wait for the PV wgmma after most of the softmax's
    # exponentials with it, right after the first row's max without it (the warpgroup idles on its own PV; ncu's
    # stall sampling: WARPGROUP.DEPBAR 14% of the MMA loop's samples, flash-attn-4's 6%)
    step "attention-late-pv-wait-run$RUN" 200 python3 benchmarks/attention.py --dtypes bf16 --head-dims 128 \
      --causal no yes --peer fa4 --repeats 4 --no-package --variant per_warp_release=True \
      --shapes 4,2048,32 4,4096,32 4,8192,32 --json "$OUT/attention-late-pv-wait-run$RUN.json"
    # A36: the epilogue's three idle warps polling O's barrier for the whole tile: one waits, two parked (ncu: 12
    # warps active an SM against flash-attn-4's 9, its tensor pipe 82% of active cycles to our 76.5%)
    step attention-parked-tests 150 "${PYTEST[@]}" tests/test_gpu_attention.py -k "epilogue_warps"
    step "attention-parked-run$RUN" 200 python3 benchmarks/attention.py --dtypes bf16 --head-dims 128 64 \
      --causal no yes --peer fa4 --repeats 4 --no-package --variant epilogue_warps=1 \
      --shapes 4,2048,32 4,4096,32 4,8192,32 --json "$OUT/attention-parked-run$RUN.json"
    # A37: the wait for the P V wgmma kept after the softmax by a no-op anchored on the last row sum (ptxas hoists it
    # to the row max: ncu's wgmma waits 22.6% of the causal loop's samples against flash-attn-4's 7.3%)
    step late-pv-wait-tests 150 "${PYTEST[@]}" tests/test_gpu_attention.py -k "late_pv_wait"
    step "attention-late-pv-anchor-run$RUN" 200 python3 benchmarks/attention.py --dtypes bf16 --head-dims 128 64 \
      --causal no yes --peer fa4 --repeats 4 --no-package --variant late_pv_wait=True \
      --shapes 4,2048,32 4,4096,32 4,8192,32 --json "$OUT/attention-late-pv-anchor-run$RUN.json"
    # A37 in fp16 too, and where the causal loop's time goes with it (Nsight Compute, beside flash-attn-4)
    step "attention-late-pv-anchor-fp16-run$RUN" 150 python3 benchmarks/attention.py --dtypes fp16 --head-dims 128 \
      --causal yes --peer fa4 --repeats 4 --no-package --variant late_pv_wait=True --shapes 4,2048,32 4,4096,32 \
      --json "$OUT/attention-late-pv-anchor-fp16-run$RUN.json"
    # head_dim 64 causal at 2,048 keys, the cell furthest from both peers (0.87x): Nsight Compute's stall sampling of
    # one launch beside flash-attn-4's (the same 192 x 128 tile), after A39 and A40 found nothing in the trip's own work
    step attention-d64-causal-stalls 240 env OUT="$OUT/stalls-d64-causal" bash benchmarks/stall_reasons.sh attention \
      --causal --shape 4,2048,32 --head-dim 64
    step attention-late-pv-stalls 150 env OUT="$OUT/stalls-late-pv" bash benchmarks/stall_reasons.sh attention \
      --causal --shape 4,2048,32 --param late_pv_wait=True
    # programmatic dependent launch (pdl=True): the load warp waits for the grid before its first TMA load and
    # lets the next grid launch after its last, so back to back the next call's launch overlaps this one's tail
    # (quack's GEMMs launch so; flash-attn-4's forward does not); its GPU tests first (a chain of calls)
    step attention-pdl-tests 200 "${PYTEST[@]}" tests/test_gpu_attention_pdl.py
    step "attention-pdl-run$RUN" 200 python3 benchmarks/attention.py --dtypes bf16 --head-dims 128 64 \
      --causal no yes --peer fa4 --repeats 4 --no-package --variant pdl=True --variant pdl=True,late_pv_wait=True \
      --shapes 4,2048,32 4,4096,32 --json "$OUT/attention-pdl-run$RUN.json"
    # skip_unseen: each warpgroup skips the softmax of the K/V tiles none of its rows sees (its wgmmas still run:
    # one issued on some paths only makes ptxas serialise them); at head_dim 64's 192-row tiles that is 10% of the
    # warpgroup trips causal at 2,048 keys, 8% at 4,096, 3% non-causal (the last tile's idle warpgroup)
    step attention-skip-unseen-tests 240 "${PYTEST[@]}" tests/test_gpu_attention.py -k "skip_unseen"
    step "attention-skip-unseen-run$RUN" 260 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 64 128 \
      --causal yes no --peer fa4 --repeats 4 --no-package --variant skip_unseen=True --shapes 4,2048,32 4,4096,32 \
      --json "$OUT/attention-skip-unseen-run$RUN.json"
    # convert_before_turn: P's conversion at the trip's start, kept ahead of the waits for K and the turn by a no-op
    # computed from all of it, so the turn is held 24 instructions less (head_dim 64 causal: the turn taken at 58,
    # the last Q K^T issued at 93, against 14 and 73), for 20 more a trip
    step attention-convert-ahead-tests 200 "${PYTEST[@]}" tests/test_gpu_attention.py -k "convert_before_turn"
    for run in 1 2; do
      step "attention-convert-ahead-run$run" 150 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 64 128 \
        --causal yes no --peer fa4 --repeats 4 --no-package --variant convert_before_turn=True --shapes 4,2048,32 \
        4,4096,32 --json "$OUT/attention-convert-ahead-run$run.json"
    done
    # mask_prefix and mask_bits: the trips that need a mask counted once a tile (the loop's check one compare) and
    # the mask as bits of a register that ptxas moves into predicates seven at a time (R2P), as flash-attn-4 masks;
    # head_dim 64 causal: 451 -> 444 instructions an unmasked trip, 588 -> 556 a masked one
    step attention-mask-tests 240 "${PYTEST[@]}" tests/test_gpu_attention.py -k "mask_prefix or mask_bits"
    step "attention-mask-run$RUN" 220 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 64 128 \
      --causal yes --peer fa4 --repeats 4 --no-package --variant mask_prefix=True,mask_bits=True \
      --variant mask_bits=True --shapes 4,2048,32 4,4096,32 --json "$OUT/attention-mask-run$RUN.json"
    step "attention-tuned-run$RUN" 240 python3 benchmarks/attention.py --tuned --dtypes bf16 fp16 --head-dims 128 \
      --peer fa4 --peer cudnn --repeats 4 --json "$OUT/attention-tuned-run$RUN.json"
    step "attention-wide-tile-run$RUN" 260 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 128 \
      --causal no yes --peer fa4 --repeats 4 --no-package --variant tile_n=176,kv_stages=3 --shapes 4,4096,32 4,8192,32 1,16384,32 \
      --json "$OUT/attention-wide-tile-run$RUN.json"
    # the tuned package with its long-row rule (176-wide K/V tiles from 8,193 keys), its picks on the GPU first
    step attention-dispatch-tests 240 "${PYTEST[@]}" tests/test_gpu_attention.py -k tuned_dispatch
    step "attention-long-rows-run$RUN" 150 python3 benchmarks/attention.py --tuned --dtypes bf16 fp16 --head-dims 128 \
      --causal no yes --peer fa4 --repeats 4 --shapes 4,8192,32 1,16384,32 --json "$OUT/attention-long-rows-run$RUN.json"
    # where the long-row rule's bound goes between 8,192 and 16,384 keys: the wide tile beside the default
    step "attention-long-bound-run$RUN" 150 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 128 \
      --causal no yes --peer fa4 --repeats 4 --no-package --variant tile_n=176,kv_stages=3 --shapes 2,12288,32 \
      --json "$OUT/attention-long-bound-run$RUN.json"
    # head_dim 64's tuned package (SHORT_ROWS over the three warpgroups for non-causal rows up to 8,192 keys): its own
    # tests on the GPU, each design on either side of the bound
    step attention-d64-dispatch-tests 300 "${PYTEST[@]}" tests/test_gpu_attention.py -k "tuned_dispatch and 64"
    # head_dim 64: its tuned package beside flash-attn-4 and cuDNN on the issue's shapes
    step "attention-d64-run$RUN" 200 python3 benchmarks/attention.py --tuned --dtypes bf16 fp16 --head-dims 64 \
      --peer fa4 --peer cudnn --repeats 4 --json "$OUT/attention-d64-run$RUN.json"
    # the causal short rows, where both head dims miss flash-attn-4 the most: its LPT tile order (A24, never timed)
    step "attention-causal-order-run$RUN" 200 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 128 64 \
      --causal yes --peer fa4 --repeats 4 --no-package --variant causal_order=longest_first --shapes 4,2048,32 \
      4,4096,32 --json "$OUT/attention-causal-order-run$RUN.json"
    # the default's timeline at s = 4096, where flash-attn-4 leads it most (0.88-0.92x)
    step attention-profile 150 python3 benchmarks/profile_kernels.py --out "$OUT/profiles" --only attention_sm90_default
    # the same, compiled with runtime extents as the package holds it (its K/V loop is the one a model runs)
    step attention-profile-dynamic 150 python3 benchmarks/profile_kernels.py --dynamic --out "$OUT/profiles-dynamic" \
      --only attention_sm90_default
    # A31: the persistent schedule with two Q stages and 176-wide K/V tiles (two stages fit), on the rows where neither
    # SHORT_ROWS nor LONG_ROWS pays alone (4,096 and 8,192 keys, non-causal), beside SHORT_ROWS
    step "attention-short-wide-run$RUN" 180 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 128 \
      --causal no --peer fa4 --repeats 4 --no-package --variant persistent=True,q_stages=2,tile_n=176,kv_stages=2 \
      --variant persistent=True,q_stages=2 --shapes 4,4096,32 4,8192,32 \
      --json "$OUT/attention-short-wide-run$RUN.json"
    # head_dim 64's causal short rows (0.87x flash-attn-4): the two warpgroups (0.97-0.98x the three there, A20) and
    # the LPT order (+1% in A24's one run), alone and together, beside the three-warpgroup preset
    step "attention-d64-causal-short-run$RUN" 150 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 64 \
      --causal yes --peer fa4 --repeats 4 --no-package --variant causal_order=longest_first \
      --variant mma_warpgroups=2 --variant mma_warpgroups=2,causal_order=longest_first --shapes 4,2048,32 \
      --json "$OUT/attention-d64-causal-short-run$RUN.json"
    # head_dim 64's short rows (0.87-0.93x flash-attn-4 at 2,048 keys): the persistent schedule with two Q stages
    # (SHORT_ROWS, +3-5% at head_dim 128 non-causal there, never timed at 64), alone and with A41's mask as bits
    # (+1-2% causal at 2,048 keys on an H100), beside the three-warpgroup preset
    step "attention-d64-short-run$RUN" 200 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 64 \
      --causal no yes --peer fa4 --repeats 4 --no-package --variant persistent=True,q_stages=2 \
      --variant persistent=True,q_stages=2,mask_bits=True --variant mask_bits=True --shapes 4,2048,32 4,4096,32 \
      --json "$OUT/attention-d64-short-run$RUN.json"
    # A43: the persistent schedule on causal rows with the tiles in LPT order (by_pair hands every block tiles of one
    # length when an SM count is a multiple of a pair's Q tiles: 0.57-0.65x at head_dim 64), beside the default
    step attention-persistent-lpt-tests 240 "${PYTEST[@]}" tests/test_gpu_attention.py -k "persistent"
    step "attention-persistent-lpt-run$RUN" 200 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 64 128 \
      --causal yes --peer fa4 --repeats 4 --no-package --variant persistent=True,q_stages=2,causal_order=longest_first \
      --shapes 4,2048,32 4,4096,32 --json "$OUT/attention-persistent-lpt-run$RUN.json"
    # A44: head_dim 64's three warpgroups as one cooperative task (one copy of the K/V loop instead of three: the
    # loop's instruction-fetch stalls, 7.0% against flash-attn-4's 0.5%), alone and with mask_bits, beside the preset
    step attention-d64-cooperative-tests 200 "${PYTEST[@]}" tests/test_gpu_attention.py -k "variants and cooperative"
    step "attention-d64-cooperative-run$RUN" 200 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 64 \
      --causal yes no --peer fa4 --repeats 4 --no-package --variant schedule=cooperative \
      --variant schedule=cooperative,mask_bits=True --shapes 4,2048,32 4,4096,32 \
      --json "$OUT/attention-d64-cooperative-run$RUN.json"
    # A45 and A46: the persistent schedule's LPT order over all pairs as one section, and with every other L2 section
    # shortest first (A43's sections of 80 + 48 pairs leave the busiest block 1.105x the mean at head_dim 64, 2,048
    # keys; one section 1.031x, zigzag 1.068x), beside A43 and the preset
    step attention-lpt-all-tests 300 "${PYTEST[@]}" tests/test_gpu_attention.py -k "persistent_causal_tiles"
    step "attention-lpt-all-run$RUN" 240 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 64 128 \
      --causal yes --peer fa4 --repeats 4 --no-package --variant persistent=True,q_stages=2,causal_order=longest_first \
      --variant persistent=True,q_stages=2,causal_order=longest_first_all \
      --variant persistent=True,q_stages=2,causal_order=longest_first_zigzag --shapes 4,2048,32 4,4096,32 \
      --json "$OUT/attention-lpt-all-run$RUN.json"
    # the package's own call at b1 s16384 head_dim 64 (0.966-0.985x the compiled preset it runs, in six runs of
    # eight, before each round's order rotated; the two cubins are byte-identical): more rounds, the order rotating
    step "attention-d64-long-package-run$RUN" 150 python3 benchmarks/attention.py --tuned --dtypes bf16 fp16 \
      --head-dims 64 --causal no yes --peer fa4 --repeats 8 --shapes 1,16384,32 \
      --json "$OUT/attention-d64-long-package-run$RUN.json"
    # the causal short-row rules after A45 and A46 (head_dim 128: zigzag up to 2,048 keys, longest_first up to 4,096;
    # head_dim 64: longest_first_all up to 4,096): both tuned packages' own calls on the rows they changed
    step "attention-causal-rules-run$RUN" 260 python3 benchmarks/attention.py --tuned --dtypes bf16 fp16 \
      --head-dims 128 64 --causal yes --peer fa4 --peer cudnn --repeats 4 --shapes 4,2048,32 4,4096,32 \
      --json "$OUT/attention-causal-rules-run$RUN.json"
    # causal prefill at small batch (352-1,024 tiles, under eight rounds of 132, one L2 section): the persistent LPT
    # order the package picks there models 1.12-1.32 busiest-over-mean, one tile a block in LPT order (A24) 1.02-1.08,
    # the preset 1.13-1.36 (benchmarks/causal_balance.py), each beside the preset
    step "attention-small-causal-run$RUN" 200 python3 benchmarks/attention.py --dtypes bf16 --head-dims 64 128 \
      --causal yes --peer fa4 --repeats 4 --no-package --variant causal_order=longest_first \
      --variant persistent=True,q_stages=2,causal_order=longest_first \
      --shapes 1,2048,32 2,2048,16 1,4096,16 1,4096,32 --json "$OUT/attention-small-causal-run$RUN.json"
    # A47: snake_rounds, every other round of a persistent launch's tiles in reverse: its GPU tests (both head dims,
    # A43's and A45's orders snaked), then beside the orders the package picks on the causal rows, at b4 and at
    # small batch (under three rounds of 132 tiles, where the LPT orders alone model 1.19-1.32 and the snake 1.02-1.10)
    step attention-snake-tests 300 "${PYTEST[@]}" tests/test_gpu_attention.py -k "persistent_causal_tiles and True"
    step "attention-snake-d64-run$RUN" 240 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 64 \
      --causal yes --peer fa4 --repeats 4 --no-package --variant persistent=True,q_stages=2,causal_order=longest_first_all \
      --variant persistent=True,q_stages=2,causal_order=longest_first_all,snake_rounds=True \
      --shapes 4,2048,32 4,4096,32 1,2048,32 1,4096,16 --json "$OUT/attention-snake-d64-run$RUN.json"
    step "attention-snake-d128-run$RUN" 240 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 128 \
      --causal yes --peer fa4 --repeats 4 --no-package --variant persistent=True,q_stages=2,causal_order=longest_first_zigzag \
      --variant persistent=True,q_stages=2,causal_order=longest_first_zigzag,snake_rounds=True \
      --shapes 4,2048,32 4,4096,32 1,2048,32 1,4096,16 --json "$OUT/attention-snake-d128-run$RUN.json"
    # A43's bound at head_dim 64, when its rule stopped at 2,048 keys (+7-9% there, 4,096 level, 3,072 +1-3% in one
    # run): the lengths between (the rule now reaches 4,096 keys with A45's order)
    step "attention-d64-causal-bound-run$RUN" 150 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 64 \
      --causal yes --peer fa4 --repeats 4 --no-package --variant persistent=True,q_stages=2,causal_order=longest_first \
      --shapes 4,2560,32 4,3072,32 4,3584,32 --json "$OUT/attention-d64-causal-bound-run$RUN.json"
    # SHORT_ROWS' bound (2,048 keys) was set before A32 made the default's loop shorter: SHORT_ROWS beside the
    # default on both sides of it, to say whether the bound moves
    step "attention-short-bound-run$RUN" 180 python3 benchmarks/attention.py --dtypes bf16 fp16 --head-dims 128 \
      --causal no --peer fa4 --repeats 4 --no-package --variant persistent=True,q_stages=2 \
      --shapes 4,2048,32 4,3072,32 4,4096,32 --json "$OUT/attention-short-bound-run$RUN.json"
    ;;
esac
echo "== round done at $(( $(date +%s) - started )) s"
# PACK=1: the round's folder as one tarball beside it (a device call returns at most eight files)
if [[ ${PACK:-0} == 1 ]]; then
  tar -czf "$OUT.tgz" -C "$OUT" . && rm -rf "$OUT" && echo "== packed into $OUT.tgz"
fi
