#!/usr/bin/env bash
# Run the numerics-sensitive tests (pytest marker `numerics`) once per CPU kind this project meets,
# emulated on the machine at hand by capping the instruction sets PyTorch's kernels may dispatch to.
#
#   tools/cpu_kinds.sh                 the `numerics` tests under every cap below
#   tools/cpu_kinds.sh --suite         the whole suite under every cap (about as long as CI, per cap)
#   tools/cpu_kinds.sh -- ARGS         pytest ARGS instead of `-m numerics` (e.g. -- tests/test_batching.py)
#   FUD_CPU_KINDS="avx2 default"       only these caps (names as below)
#
# Caps (ATen's CPU capability for its own kernels; oneDNN's for convolutions and matmuls):
#   native   nothing capped: what this CPU does (AMX + AVX512-BF16 on an Intel Xeon, AVX512 on an EPYC
#            with AVX512-BF16, AVX2 on an AVX2-only EPYC)
#   avx512   ATEN_CPU_CAPABILITY=avx512 ONEDNN_MAX_CPU_ISA=AVX512_CORE (an AVX512 CPU without AMX)
#   avx2     ATEN_CPU_CAPABILITY=avx2   ONEDNN_MAX_CPU_ISA=AVX2        (an AVX2-only CPU)
#   default  ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41      (no vector extensions beyond SSE4.1)
# A cap cannot raise a CPU above what it has: on an AVX2-only machine `avx512` is skipped (ATen would run
# AVX-512 kernels and die of SIGILL), and the script says so. What no cap emulates (docs/numerics.md): MKL's own code paths (FFT, BLAS in numpy),
# which pick by CPU vendor and model; AMX and native bf16 on a CPU without them; thread counts other
# than this machine's.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
pytest_args=(-q -m numerics)
if [ "${1:-}" = "--suite" ]; then pytest_args=(-q); shift; fi
if [ "${1:-}" = "--" ]; then shift; pytest_args=("$@"); fi
kinds=(${FUD_CPU_KINDS:-native avx512 avx2 default})
flags="$(grep -m1 '^flags' /proc/cpuinfo || true)"
model="$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)"
echo "[cpu_kinds] CPU: ${model:-unknown}; $(echo "$flags" | grep -oE 'avx2|avx512f|avx512_bf16|amx_tile' | sort -u | tr '\n' ' ')"
declare -A result
status=0
for kind in "${kinds[@]}"; do
  case "$kind" in
    native)  env_caps=() ;;
    avx512)  env_caps=(ATEN_CPU_CAPABILITY=avx512 ONEDNN_MAX_CPU_ISA=AVX512_CORE)
             # ATen takes the capability it is told: AVX-512 kernels on a CPU without them die of SIGILL
             case "$flags" in *avx512f*) ;; *)
               echo "[cpu_kinds] avx512: skipped, this CPU has no AVX-512 (a cap cannot raise a CPU above what it has)"
               result[$kind]="skipped (no AVX-512 here)"; continue ;; esac ;;
    avx2)    env_caps=(ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2) ;;
    default) env_caps=(ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41) ;;
    *) echo "[cpu_kinds] unknown kind '$kind' (native, avx512, avx2, default)" >&2; exit 2 ;;
  esac
  echo "[cpu_kinds] === $kind: ${env_caps[*]:-no caps} ./fud test ${pytest_args[*]}"
  start=$SECONDS
  if env "${env_caps[@]}" ./fud test "${pytest_args[@]}"; then rc=0; else rc=$?; status=1; fi
  result[$kind]="rc $rc, $((SECONDS - start)) s"
done
echo "[cpu_kinds] summary:"
for kind in "${kinds[@]}"; do echo "  $kind: ${result[$kind]}"; done
exit $status
