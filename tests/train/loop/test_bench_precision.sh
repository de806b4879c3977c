#!/usr/bin/env bash
# test_bench_precision.sh — `farthing bench precision --quick` (tools/bench/bench_precision.cpp,
# tools/plot_precision.py, the trainer's gradient histogram) on stories260K from ../shared:
# the report, the JSON and the figures exist with every section, setting and step; the numbers
# are sane (fractions in [0, 1], the reference's held-out loss drops, the histograms count every
# gradient value); and the claim it exists for holds: at lr 1e-6, the bf16 weights cast from an
# fp32 master with stochastic rounding are left unchanged less often than with round-to-nearest,
# at every one of the first 20 steps (and SR vs RN without a master, once farthing runs the latter).
# Arguments: $1 farthing binary  $2 shared folder (../shared)  $3 project source dir.
source "$(dirname "$0")/train_test_common.sh"

OUT="$WORK/precision"
start=$(date +%s)
FARTHING_SHARED_DIR="$SHARED" FARTHING_PLOT_PRECISION_SCRIPT="$SRC/tools/plot_precision.py" \
  "$FARTHING" bench precision --quick --out "$OUT" > "$WORK/stdout.txt" 2> "$WORK/stderr.txt" \
  || fail "bench precision --quick failed: $(tail -5 "$WORK/stderr.txt")"
echo "ok: bench precision --quick ran in $(( $(date +%s) - start )) s"

for f in precision.md precision.json; do [ -s "$OUT/$f" ] || fail "$OUT/$f missing or empty"; done
# The plot script hands over to /usr/bin/python3 when the PATH python3 lacks matplotlib
# (tools/pyplot_import.py), so figures are expected wherever either has it.
have_matplotlib=0
if python3 -c "import matplotlib" 2>/dev/null || { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import matplotlib" 2>/dev/null; }; then
  have_matplotlib=1
fi
is_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }
if ((have_matplotlib)); then
  for f in precision_loss.png precision_unchanged.png precision_underflow.png; do
    is_png "$OUT/$f" || fail "$OUT/$f is not a PNG"
  done
  echo "ok: three PNG figures"
else
  grep -q "figures not drawn" "$OUT/precision.md" || fail "no matplotlib, yet the report does not say the figures are missing"
  echo "ok: no matplotlib here; the report says the figures were not drawn"
fi

python3 - "$OUT" <<'PY' || fail "the report's structure or its numbers are wrong (above)"
import json, math, sys
out = sys.argv[1]
md = open(f"{out}/precision.md").read()
doc = json.load(open(f"{out}/precision.json"))
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)

for heading in ("## Sticking", "## Trajectories", "## Underflow"):
    check(heading in md, f"precision.md lacks the section '{heading}'")
for image in ("precision_unchanged.png", "precision_loss.png", "precision_underflow.png"):
    check(f"]({image})" in md, f"precision.md does not show {image}")
check("FP8 linear layers (block scaling) against bf16 compute" in md, "precision.md lacks the FP8-vs-bf16 line")

s = doc["sticking"]
check(s["steps"] == 20, "sticking: not 20 steps")
check(sorted(s["lrs"]) == [1e-6, 1e-5], f"sticking: lrs {s['lrs']}, expected 1e-6 and 1e-5")
names = ["bf16 RN, no master", "bf16 SR, no master", "fp32 master, RN", "fp32 master, SR", "remainder16 (RN)",
         "fp16 compute, fp32 master, RN"]
runs = {(r["name"], r["lr"]): r for r in s["runs"]}
for lr in (1e-6, 1e-5):
    for name in names:
        r = runs.get((name, lr))
        check(r is not None, f"sticking: no run '{name}' at lr {lr}")
        if r is None:
            continue
        check(f"| {name} |" in md, f"precision.md lacks the sticking row '{name}'")
        if "refused" in r:  # every setting runs (fp8 is a trajectory row only)
            check(False, f"sticking '{name}' refused: {r['refused']}")
            continue
        u = r["unchanged_fraction"]
        check(len(u) == 20 and all(0.0 <= x <= 1.0 for x in u), f"sticking '{name}' lr {lr}: {len(u)} fractions, some outside [0, 1]")

t = doc["trajectories"]
expected = ["reference: f32 moments + f32 master", "reference with bf16 gradients (train.grad_dtype bf16)",
            "8-bit + f32 master", "8-bit + remainder16", "8-bit, no master, SR",
            "8-bit, no master, RN", "4-bit, no master, SR", "bf16 compute (f32 moments + master)",
            "fp8 block scaling (f32 moments + master)", "nvfp4, the paper's recipe (f32 moments + master)",
            "nvfp4 without SR", "nvfp4 without RHT", "nvfp4 without bf16 blocks",
            "mxfp4, the paper's recipe (f32 moments + master)", "mxfp4 without the 3/4 pre-scale",
            "fp16 + dynamic loss scaling (f32 moments + master)"]
check([r["name"] for r in t["runs"]] == expected, f"trajectories: {[r['name'] for r in t['runs']]}")
for r in t["runs"]:
    check(f"| {r['name']} |" in md, f"precision.md lacks the trajectory row '{r['name']}'")
    if "refused" in r:
        check(False, f"trajectory '{r['name']}' refused: {r['refused']}")
        continue
    ev = r["eval"]
    check(ev[0][0] == 0 and ev[-1][0] == t["steps"] and len(ev) == t["steps"] // t["eval_every"] + 1,
          f"trajectory '{r['name']}': eval steps {[e[0] for e in ev]}")
    check(all(math.isfinite(v) and v > 0 for _, v in ev), f"trajectory '{r['name']}': eval losses {ev}")
ref = t["runs"][0]
check(ref["relative_to_reference"] == 0.0, "the reference is not 0% from itself")
check(ref["grad_dtype"] == "fp32", f"the reference keeps its gradients in {ref['grad_dtype']}, not fp32")
check(t["runs"][1]["grad_dtype"] == "bf16", f"the bf16-gradient row keeps them in {t['runs'][1]['grad_dtype']}")
# The two differ only in the gradients' rounding, which must show in the loss by the last step.
check(t["runs"][1]["eval"][-1][1] != ref["eval"][-1][1], "the bf16-gradient row ended at the reference's exact loss")
check(ref["eval"][-1][1] < ref["eval"][0][1], f"the reference's held-out loss did not drop: {ref['eval']}")

u = doc["underflow"]
width = u["max_log2"] - u["min_log2"] + 1
hs = u.get("histograms", [])
check(len(hs) >= 3, f"underflow: {len(hs)} histograms, expected at least 3")
n_params = None
for h in hs:
    check(len(h["counts"]) == width, f"underflow: histogram with {len(h['counts'])} bands, expected {width}")
    total = sum(h["counts"]) + h["zeros"] + h["nonfinite"]
    n_params = n_params or total
    check(total == n_params, f"underflow: step {h['step']} counts {total} values, another histogram {n_params}")
    for k in ("flush_fraction_unscaled", "subnormal_fraction_unscaled", "flush_fraction_at_settled_scale"):
        check(0.0 <= h[k] <= 1.0, f"underflow: {k} = {h[k]}")
    if u["settled_loss_scale"] >= 1:
        check(h["flush_fraction_at_settled_scale"] <= h["flush_fraction_unscaled"], "underflow: the loss scale made more values flush")
check(n_params is not None and n_params >= 260032, f"underflow: a histogram counts {n_params} values; stories260K has 260032 parameters")
check(u["settled_loss_scale"] > 0, "underflow: no settled loss scale")

# The claim: at lr 1e-6, SR moves bf16 weights that RN leaves unchanged, at every one of the
# first 20 steps: the published setting (the bf16 copy cast from an fp32 master, RN vs SR), and
# without a master (pure bf16 RN vs SR).
pairs = [("fp32 master, RN", "fp32 master, SR"), ("bf16 RN, no master", "bf16 SR, no master")]
compared = 0
for rn_name, sr_name in pairs:
    rn, sr = runs.get((rn_name, 1e-6)), runs.get((sr_name, 1e-6))
    if not (rn and sr and "unchanged_fraction" in rn and "unchanged_fraction" in sr):
        continue
    compared += 1
    worse = [i + 1 for i, (a, b) in enumerate(zip(sr["unchanged_fraction"], rn["unchanged_fraction"])) if not a < b]
    check(not worse, f"at lr 1e-6 '{sr_name}' leaves no fewer weights unchanged than '{rn_name}' at steps {worse} "
                     f"(SR {sr['unchanged_fraction'][:4]}..., RN {rn['unchanged_fraction'][:4]}...)")
    if not worse:
        print(f"ok: lr 1e-6, step 20: unchanged '{rn_name}' {100 * rn['unchanged_fraction'][-1]:.4f}% > "
              f"'{sr_name}' {100 * sr['unchanged_fraction'][-1]:.4f}%")
check(compared == len(pairs), f"only {compared} of the {len(pairs)} RN / SR pairs at lr 1e-6 ran")
for e in errors:
    print("FAIL:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "ok: report, JSON and figures hold every section; SR sticks less than RN at lr 1e-6"

# --fp4: only the FP4 comparison. With the study's steps and seed its runs are the full study's
# rows bit for bit (the same trainer, data and seed), shown on the rows --only mxfp4 keeps (bf16
# compute beside them; every row runs through the same code); --steps and --seed reach every row.
for args in "--only mxfp4" "--steps 20 --seed 7"; do
  dir="$WORK/fp4"
  [[ $args == --steps* ]] && dir="$WORK/fp4_short"
  # shellcheck disable=SC2086  # $args is options
  FARTHING_SHARED_DIR="$SHARED" FARTHING_PLOT_PRECISION_SCRIPT="$SRC/tools/plot_precision.py" \
    "$FARTHING" bench precision --quick --fp4 $args --out "$dir" > "$WORK/fp4_stdout.txt" 2> "$WORK/fp4_stderr.txt" \
    || fail "bench precision --quick --fp4 $args failed: $(tail -5 "$WORK/fp4_stderr.txt")"
  for f in precision_fp4.md precision_fp4.json; do [ -s "$dir/$f" ] || fail "$dir/$f missing or empty"; done
  if ((have_matplotlib)); then
    is_png "$dir/precision_fp4_loss.png" || fail "$dir/precision_fp4_loss.png is not a PNG"
  fi
done
python3 - "$OUT/precision.json" "$WORK/fp4/precision_fp4.json" "$WORK/fp4_short/precision_fp4.json" \
  "$WORK/fp4/precision_fp4.md" <<'PY' || fail "bench precision --fp4 is wrong (above)"
import json, sys
full, fp4, short = (json.load(open(p)) for p in sys.argv[1:4])
md = open(sys.argv[4]).read()
names = ["bf16 compute (f32 moments + master)", "fp8 block scaling (f32 moments + master)",
         "nvfp4, the paper's recipe (f32 moments + master)", "nvfp4 without SR", "nvfp4 without RHT",
         "nvfp4 without bf16 blocks", "mxfp4, the paper's recipe (f32 moments + master)",
         "mxfp4 without the 3/4 pre-scale"]
only_mxfp4 = [names[0]] + [n for n in names if "mxfp4" in n]
errors = []
for doc, steps, seed, rows in ((fp4, 200, 1234, only_mxfp4), (short, 20, 7, names)):
    t = doc["trajectories"]
    got = [r["name"] for r in t["runs"]]
    if got != rows:
        errors.append(f"--fp4 rows {got}")
    if t["steps"] != steps or doc["seed"] != seed:
        errors.append(f"--fp4: steps {t['steps']} seed {doc['seed']}, expected {steps} and {seed}")
    if t["runs"] and t["runs"][0]["relative_to_bf16"] != 0.0:
        errors.append("--fp4: bf16 compute is not 0% from itself")
    for r in t["runs"]:
        if r["eval"][-1][0] != steps:
            errors.append(f"--fp4 '{r['name']}': last eval at step {r['eval'][-1][0]}, expected {steps}")
full_runs = {r["name"]: r for r in full["trajectories"]["runs"]}
for r in fp4["trajectories"]["runs"]:
    if r["eval"] != full_runs[r["name"]]["eval"]:
        errors.append(f"--fp4 '{r['name']}': held-out losses differ from the full study's: {r['eval'][-1]} vs "
                      f"{full_runs[r['name']]['eval'][-1]}")
    if f"| {r['name']} |" not in md:
        errors.append(f"precision_fp4.md lacks the row '{r['name']}'")
for r in short["trajectories"]["runs"]:
    at20 = dict((s, v) for s, v in full_runs[r["name"]]["eval"])[20]
    if r["eval"][-1][1] == at20:
        errors.append(f"--seed 7 '{r['name']}': step 20's held-out loss is seed 1234's ({at20})")
for e in errors:
    print("FAIL:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "ok: --fp4 --only mxfp4 runs bf16 and the two mxfp4 rows of the full study bit for bit; --steps and --seed reach all eight rows"

# --only naming no row, or without --fp4: refused in one line that says why.
refused_only() {  # $1: the options, $2: what the error must say
  # shellcheck disable=SC2086  # $1 is options
  if FARTHING_SHARED_DIR="$SHARED" "$FARTHING" bench precision --quick $1 --out "$WORK/only_refused" \
       > /dev/null 2> "$WORK/only_stderr.txt"; then
    fail "bench precision --quick $1 was accepted"
  fi
  grep -qF -- "$2" "$WORK/only_stderr.txt" || fail "bench precision --quick $1: expected '$2', got: $(tail -2 "$WORK/only_stderr.txt")"
}
refused_only "--fp4 --only nvfp5" "--only 'nvfp5': no FP4 comparison row's name contains it (rows: bf16 compute"
refused_only "--only mxfp4" "--only 'mxfp4': it picks rows of the FP4 comparison; add --fp4"
echo "ok: --only naming no row, and --only without --fp4, are refused in one line"
