#!/usr/bin/env bash
# Tests deploy/local-cluster.sh's process management with deploy/testing/fake-sage.py standing in
# for the sage binary (the real `sage worker` / `sage aggregator` are not needed): start, ports,
# readiness, Prometheus file_sd targets, status, stop order, Ctrl-C, start-up failures, SIGKILL
# after the stop timeout, never signalling a process it did not start.
#
# Needs nats-server and python3; uses prometheus, shellcheck and curl when present.
# Everything listens on 127.0.0.1; every state directory is a fresh temporary one.
#
#   deploy/testing/test-local-cluster.sh        # prints "N passed, N failed" last; exit 1 on a failure

set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LC=$HERE/../local-cluster.sh
FAKE=$HERE/fake-sage.py
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sage-lc-test.XXXXXX")
PASS=0
FAIL=0
STATES=()
FOREIGN_PID=""
# Nothing lands in the caller's directory: results and relative paths go to the temp dir.
export RESULTS_DIR=$TMP/results
cd "$TMP" || exit 1

cleanup() {
  local s
  for s in "${STATES[@]}"; do
    SAGE_BIN=$FAKE STOP_TIMEOUT=5 "$LC" stop --state-dir "$s" >/dev/null 2>&1 || true
  done
  if [[ -n $FOREIGN_PID ]]; then kill "$FOREIGN_PID" 2>/dev/null || true; fi
  rm -rf -- "$TMP"
}
trap cleanup EXIT

ok() { PASS=$((PASS + 1)); printf 'ok    %s\n' "$1"; }
ko() { FAIL=$((FAIL + 1)); printf 'FAIL  %s\n' "$1"; [[ -z ${2:-} ]] || sed 's/^/      /' "$2" | tail -n 25; }
quiet() { "$@" >/dev/null 2>&1; }
check() { # NAME COMMAND...: pass when COMMAND succeeds
  local name=$1
  shift
  if "$@"; then ok "$name"; else ko "$name"; fi
}

# Every pid listed in a pids file is gone (or a zombie awaiting its reaper).
all_gone() {
  local name pid rest st
  while read -r name pid rest; do
    if kill -0 "$pid" 2>/dev/null; then
      st=$(ps -o stat= -p "$pid" 2>/dev/null || true)
      # A zombie awaits its reaper; an empty state means it was reaped just now.
      [[ -z $st || $st == Z* ]] || { echo "still running: $name $pid" >&2; return 1; }
    fi
  done <"$1"
  return 0
}

port_free() { ! (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null || true; }

command -v nats-server >/dev/null || { echo "nats-server is needed"; exit 1; }
have_prom=0
command -v prometheus >/dev/null && command -v curl >/dev/null && have_prom=1

# ---- static checks ----
check "bash -n local-cluster.sh" bash -n "$LC"
if command -v shellcheck >/dev/null; then
  check "shellcheck local-cluster.sh test-local-cluster.sh" shellcheck "$LC" "$HERE/test-local-cluster.sh"
else
  echo "skip  shellcheck (not installed)"
fi
check "--help exits 0" quiet "$LC" --help
if "$LC" --bogus >/dev/null 2>&1; then ko "unknown option is rejected"; else ok "unknown option is rejected"; fi

# ---- a binary without the distributed mode: nothing is started ----
S=$TMP/nobin
STATES+=("$S")
if SAGE_BIN=/bin/false "$LC" --state-dir "$S" --detach >"$TMP/nobin.out" 2>&1; then
  ko "binary without 'worker' is refused" "$TMP/nobin.out"
else
  if grep -q "has no distributed mode" "$TMP/nobin.out" && [[ ! -e $S/pids ]]; then
    ok "binary without 'worker' is refused before anything starts"
  else
    ko "binary without 'worker' is refused before anything starts" "$TMP/nobin.out"
  fi
fi

# ---- detached default layout: 5 role workers + aggregator (+ Prometheus) ----
S=$TMP/a
STATES+=("$S")
prom_args=(--no-prometheus)
((have_prom)) && prom_args=(--prometheus-port 19090)
if SAGE_BIN=$FAKE "$LC" --state-dir "$S" --results-dir "$TMP/results" --metrics-port 19464 \
  "${prom_args[@]}" --detach >"$TMP/a.out" 2>&1; then
  ok "detached start (default layout)"
else
  ko "detached start (default layout)" "$TMP/a.out"
fi
cp "$S/pids" "$TMP/a.pids" 2>/dev/null || : >"$TMP/a.pids"
n_workers=$(awk '$4 == "worker"' "$TMP/a.pids" | wc -l)
check "one worker per role by default (5)" test "$n_workers" -eq 5
check "one aggregator" test "$(awk '$4 == "aggregator"' "$TMP/a.pids" | wc -l)" -eq 1
# The recorded pid is the process itself (no wrapper in between).
pid_is_process() {
  local name pid rest
  while read -r name pid rest; do
    case $name in
      nats) grep -q nats-server "/proc/$pid/cmdline" || return 1 ;;
      prometheus) grep -q prometheus "/proc/$pid/cmdline" || return 1 ;;
      *) grep -q fake-sage "/proc/$pid/cmdline" || return 1 ;;
    esac
  done <"$TMP/a.pids"
}
[[ -d /proc/self ]] && check "recorded pids are the started processes" pid_is_process
ports=$(awk '$4 == "worker" || $4 == "aggregator" {print $5}' "$TMP/a.pids" | sort -n | tr '\n' ' ')
check "metrics ports 19464.. one per process ($ports)" test "$ports" == "19464 19465 19466 19467 19468 19469 "
all_ready() {
  local p
  for p in $ports; do [[ $(code "http://127.0.0.1:$p/readyz") == 200 ]] || return 1; done
}
check "every /readyz is 200" all_ready
check "status exits 0" quiet "$LC" status --state-dir "$S"
targets_ok() {
  python3 - "$S/prometheus/targets" <<'EOF'
import json, sys
d = sys.argv[1]
w = json.load(open(f"{d}/sage-worker.json"))
a = json.load(open(f"{d}/sage-aggregator.json"))
roles = sorted(g["labels"]["roles"] for g in w)
assert roles == ["dialogue", "judge", "rule", "service", "user"], roles
assert len(a) == 1 and a[0]["labels"]["process"] == "aggregator", a
assert all("role" not in g["labels"] for g in w + a)
EOF
}
check "file_sd target lists (labels process, roles)" targets_ok
if ((have_prom)); then
  prom_up() {
    for _ in $(seq 1 30); do
      if curl -s 'http://127.0.0.1:19090/api/v1/query?query=sum%20by%20(job)(up)' |
        python3 -c '
import json, sys
r = {x["metric"]["job"]: float(x["value"][1]) for x in json.load(sys.stdin)["data"]["result"]}
sys.exit(0 if r.get("sage-worker") == 5 and r.get("sage-aggregator") == 1 else 1)'; then
        return 0
      fi
      sleep 1
    done
    return 1
  }
  check "Prometheus scrapes 5 sage-worker + 1 sage-aggregator targets (up == 1)" prom_up
  rules_loaded() {
    curl -s 'http://127.0.0.1:19090/api/v1/rules?type=alert' | python3 -c '
import json, sys
names = [r["name"] for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]]
sys.exit(0 if len(names) == 6 and all(n.startswith("Sage") for n in names) else 1)'
  }
  check "Prometheus loaded the 6 alerting rules of deploy/alerts.yml" rules_loaded
fi
if SAGE_BIN=$FAKE "$LC" --state-dir "$S" --metrics-port 19464 --no-prometheus --detach >"$TMP/a2.out" 2>&1; then
  ko "a second start on the same state dir is refused" "$TMP/a2.out"
else
  ok "a second start on the same state dir is refused"
fi
nats_port=$(awk '$1 == "nats" {print $5}' "$TMP/a.pids")
store=$S/jetstream
check "temporary JetStream store exists while running" test -d "$store/jetstream"
SAGE_BIN=$FAKE "$LC" stop --state-dir "$S" >"$TMP/a.stop" 2>&1
check "stop exits 0" test $? -eq 0
check "stop: every started process is gone" all_gone "$TMP/a.pids"
order=$(grep -o 'stopping [0-9]* [a-z]*' "$TMP/a.stop" | awk '{print $3}' | tr '\n' ' ')
expected="worker aggregator nats "
((have_prom)) && expected="worker aggregator prometheus nats "
check "stop order: $expected" test "$order" == "$expected"
ports_free() {
  local p
  for p in $ports $nats_port; do port_free "$p" || return 1; done
}
check "stop: ports are free again" ports_free
check "stop: temporary store removed" test ! -e "$store"
check "stop: pids file removed" test ! -e "$S/pids"
check "stop again: nothing to stop, exit 0" quiet "$LC" stop --state-dir "$S"

# ---- foreground, all-role workers and per-model service workers; SIGINT stops everything ----
S=$TMP/b
STATES+=("$S")
# As from a terminal: SIGINT at its default (a script's background job starts with SIGINT
# ignored, and bash cannot trap a signal ignored at entry).
RESET_SIGINT='import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])'
SAGE_BIN=$FAKE python3 -c "$RESET_SIGINT" "$LC" --state-dir "$S" --results-dir "$TMP/results" --metrics-port 19464 --no-prometheus \
  --workers 2 --service 1 --service-model model-a --service-model org/model-b \
  --store-dir "$TMP/store-b" >"$TMP/b.out" 2>&1 &
lc_pid=$!
for _ in $(seq 1 60); do grep -q "Ctrl-C stops everything" "$TMP/b.out" && break; sleep 0.5; done
cp "$S/pids" "$TMP/b.pids" 2>/dev/null || : >"$TMP/b.pids"
names=$(awk '$4 == "worker" {print $1}' "$TMP/b.pids" | tr '\n' ' ')
check "workers: 2 all-role + 1 per service model ($names)" \
  test "$names" == "worker-all-1 worker-all-2 worker-service-model-a-1 worker-service-org_model-b-1 "
model_args() { tr '\0' ' ' <"/proc/$(awk '$1 == "worker-service-org_model-b-1" {print $2}' "$TMP/b.pids")/cmdline"; }
check "per-model workers get --model" grep -q -- "--roles service --metrics-addr 127.0.0.1:[0-9]* --model org/model-b" <(model_args)
kill -INT "$lc_pid"
wait "$lc_pid"
rc=$?
check "foreground: SIGINT -> exit 130 (got $rc)" test "$rc" -eq 130
check "foreground: every started process is gone" all_gone "$TMP/b.pids"
check "foreground: 5 sage processes and NATS exited 0" test "$(grep -c 'exited with status 0' "$TMP/b.out")" -eq 6
check "given --store-dir is kept" test -d "$TMP/store-b/jetstream"

# ---- a process that fails at start-up: reported, everything stopped, exit 1 ----
S=$TMP/c
STATES+=("$S")
if FAKE_FAIL=aggregator SAGE_BIN=$FAKE "$LC" --state-dir "$S" --metrics-port 19464 --no-prometheus \
  --workers 1 >"$TMP/c.out" 2>&1; then
  ko "start-up failure -> exit 1" "$TMP/c.out"
else
  ok "start-up failure -> exit 1"
fi
check "start-up failure: the log tail is shown" grep -q "failing at start as asked" "$TMP/c.out"
check "start-up failure: nothing left running" test ! -e "$S/pids"
check "start-up failure: NATS was stopped" grep -q "nats (pid [0-9]*) exited with status 0" "$TMP/c.out"

# ---- foreground: processes dying later are reported; none left -> everything stops, exit 1 ----
S=$TMP/g
STATES+=("$S")
SAGE_BIN=$FAKE "$LC" --state-dir "$S" --metrics-port 19464 --no-prometheus --workers 1 \
  --dialogue 0 --user 0 --service 0 --judge 0 --rule 0 >"$TMP/g.out" 2>&1 &
lc_pid=$!
for _ in $(seq 1 60); do grep -q "Ctrl-C stops everything" "$TMP/g.out" && break; sleep 0.5; done
cp "$S/pids" "$TMP/g.pids" 2>/dev/null || : >"$TMP/g.pids"
kill -KILL "$(awk '$1 == "worker-all-1" {print $2}' "$TMP/g.pids")"
for _ in $(seq 1 20); do grep -q "worker-all-1 .* exited unexpectedly" "$TMP/g.out" && break; sleep 0.5; done
check "foreground: a dead worker is reported" grep -q "worker-all-1 (pid [0-9]*) exited unexpectedly (status 137)" "$TMP/g.out"
check "foreground: the others keep running" kill -0 "$lc_pid"
kill -KILL "$(awk '$1 == "aggregator" {print $2}' "$TMP/g.pids")"
wait "$lc_pid"
rc=$?
check "foreground: no sage process left -> exit 1 (got $rc)" test "$rc" -eq 1
check "foreground: no sage process left -> NATS stopped too" all_gone "$TMP/g.pids"

# ---- a process that ignores SIGTERM is killed after --stop-timeout ----
S=$TMP/d
STATES+=("$S")
FAKE_IGNORE_TERM=1 SAGE_BIN=$FAKE "$LC" --state-dir "$S" --metrics-port 19464 --no-prometheus \
  --workers 1 --dialogue 0 --user 0 --service 0 --judge 0 --rule 0 --detach >"$TMP/d.out" 2>&1
cp "$S/pids" "$TMP/d.pids" 2>/dev/null || : >"$TMP/d.pids"
t0=$SECONDS
STOP_TIMEOUT=2 "$LC" stop --state-dir "$S" >"$TMP/d.stop" 2>&1
check "SIGTERM ignored: SIGKILL after the timeout" grep -q "still running after 2s: SIGKILL" "$TMP/d.stop"
check "SIGTERM ignored: every process gone" all_gone "$TMP/d.pids"
check "SIGTERM ignored: stop took < 15s ($((SECONDS - t0))s)" test $((SECONDS - t0)) -lt 15

# ---- a pid that is no longer ours is never signalled ----
S=$TMP/e
STATES+=("$S")
mkdir -p "$S"
sleep 300 &
FOREIGN_PID=$!
printf 'worker-x %s 1 worker 19999 /dev/null\n' "$FOREIGN_PID" >"$S/pids"
"$LC" stop --state-dir "$S" >"$TMP/e.out" 2>&1
check "a recycled pid (other start time) is left alone" kill -0 "$FOREIGN_PID"

# ---- a given NATS port that is taken is an error ----
S=$TMP/f
STATES+=("$S")
python3 -c '
import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 19480))
s.listen()
time.sleep(20)' &
holder=$!
sleep 0.5
if SAGE_BIN=$FAKE "$LC" --state-dir "$S" --nats-port 19480 --metrics-port 19464 --results-dir "$TMP/results" \
  --no-prometheus --detach >"$TMP/f.out" 2>&1; then
  ko "taken --nats-port is refused" "$TMP/f.out"
else
  check "taken --nats-port is refused" grep -q "NATS port 19480 is taken" "$TMP/f.out"
fi
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

printf '\n%d passed, %d failed\n' "$PASS" "$FAIL"
((FAIL == 0))
