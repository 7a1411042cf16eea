#!/usr/bin/env bash
# SAGE-RS local cluster: the distributed mode on one machine.
#
# Starts, on 127.0.0.1 only:
#   * nats-server with JetStream (port 4222, or the next free port when 4222 is taken),
#   * `sage worker` processes: one per role by default, or as many per role as asked,
#   * one `sage aggregator` writing the results directory,
#   * Prometheus (when `prometheus` is on PATH) scraping every sage process, configured by
#     deploy/prometheus.yml and file_sd target lists this script writes,
# each sage process on its own metrics port (9464, 9465, ...), every log in a log directory.
#
# Foreground by default: Ctrl-C (or SIGTERM) stops everything it started, workers first (SIGTERM,
# then up to --stop-timeout seconds to finish in-flight dialogues), then the aggregator, Prometheus
# and NATS last. With --detach it returns once everything is ready; `stop` stops it later. Every
# process started is recorded (pid + start time) in the state directory, so `stop` only ever
# signals processes this script started, even after a crash of the script itself.
#
# Needs: bash, nats-server (unless --nats-url), the sage binary with the distributed mode
# (${SAGE_BIN:-target/release/sage}; build it with `cargo build --release`), optionally
# prometheus and curl (without curl, health checks use bash's /dev/tcp).
#
# Examples:
#   deploy/local-cluster.sh                           # one worker per role, foreground
#   deploy/local-cluster.sh --workers 2               # two all-role workers
#   WORKERS_DIALOGUE=2 WORKERS_SERVICE=3 deploy/local-cluster.sh --detach
#   deploy/local-cluster.sh --service 2 --service-model local-llm --service-model sim-balanced
#   deploy/local-cluster.sh status
#   deploy/local-cluster.sh stop
#
# Run `deploy/local-cluster.sh --help` for every option.

set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
ROLES=(dialogue user service judge rule)

usage() {
  cat <<'EOF'
Usage: deploy/local-cluster.sh [start] [OPTIONS]   start the cluster (foreground unless --detach)
       deploy/local-cluster.sh stop   [--state-dir DIR] [--stop-timeout S]
       deploy/local-cluster.sh status [--state-dir DIR]

Workers (environment variable in brackets):
  --workers N           N workers serving every role (dialogue,user,service,judge,rule) [WORKERS]
  --dialogue N          N workers with --roles dialogue                  [WORKERS_DIALOGUE]
  --user N              N workers with --roles user                      [WORKERS_USER]
  --service N           N workers with --roles service (per model below) [WORKERS_SERVICE]
  --judge N             N workers with --roles judge                     [WORKERS_JUDGE]
  --rule N              N workers with --roles rule                      [WORKERS_RULE]
                        Default: one worker per role, or none per role when --workers is given.
  --service-model M     repeatable: start the --service workers once per model, each with
                        `--model M` (default: they serve every model)  [SERVICE_MODELS, comma list]
  --concurrency N       --concurrency for workers serving the dialogue role     [CONCURRENCY]

NATS:
  --nats-port N         client port (default 4222, or the next free one)        [NATS_PORT]
  --nats-http-port N    monitoring port (default 8222, or the next free one)    [NATS_HTTP_PORT]
  --store-dir DIR       JetStream store, kept after stop (default: a temporary
                        directory in the state dir, removed on stop)            [STORE_DIR]
  --nats-url URL        use this running server (JetStream enabled) instead of
                        starting one                                            [NATS_URL]

Other:
  --results-dir DIR     aggregator output (default ./results)                   [RESULTS_DIR]
  --log-dir DIR         process logs (default STATE_DIR/logs)                   [LOG_DIR]
  --state-dir DIR       pids, configs, temp store
                        (default ${TMPDIR:-/tmp}/sage-local-cluster-$USER)      [STATE_DIR]
  --metrics-port N      first metrics port; each sage process takes the next
                        free one (default 9464)                                 [METRICS_PORT]
  --prometheus-port N   Prometheus web port (default 9090, or the next free)    [PROMETHEUS_PORT]
  --no-prometheus       do not start Prometheus even if it is on PATH           [PROMETHEUS=0]
  --detach              return once everything is ready; stop with `stop`       [DETACH=1]
  --ready-timeout S     seconds to wait for every /readyz (default 60; 0: don't wait) [READY_TIMEOUT]
  --stop-timeout S      seconds a sage process gets to exit after SIGTERM
                        before SIGKILL (default 60)                             [STOP_TIMEOUT]
  -h, --help            this text

The binary is ${SAGE_BIN:-target/release/sage} (relative to the current directory, else to the
repository root). Other SAGE_* / RUST_LOG / OTEL_* variables in the environment reach every sage
process (e.g. SAGE_LOG_FORMAT=json, OPENAI_API_KEY=...).
EOF
}

# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------
say() { printf '[local-cluster] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

abspath() {
  case $1 in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s/%s\n' "$PWD" "$1" ;;
  esac
}

# True when something accepts TCP connections on 127.0.0.1:$1.
port_in_use() {
  (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The first port >= $1 that is free and not in the space-separated list $RESERVED_PORTS.
next_free_port() {
  local p=$1
  while ((p < 65536)); do
    if [[ " $RESERVED_PORTS " != *" $p "* ]] && ! port_in_use "$p"; then
      printf '%s\n' "$p"
      return 0
    fi
    p=$((p + 1))
  done
  return 1
}

# HTTP status code of GET http://127.0.0.1:$1$2, or 000 when nothing answers.
http_code() {
  local port=$1 path=$2 code line
  if command -v curl >/dev/null 2>&1; then
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port$path") || code=000
  else
    code=000
    if { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
      printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$path" "$port" >&3
      line=""
      IFS= read -r -t 2 line <&3 || true
      exec 3<&- 3>&-
      code=${line#* }
      code=${code%% *}
    fi
  fi
  [[ $code =~ ^[0-9]{3}$ ]] || code=000
  printf '%s\n' "$code"
}

# Start time of process $1 (clock ticks since boot on Linux; `ps` lstart elsewhere). Together
# with the pid it identifies the process, so a recycled pid is never mistaken for ours.
proc_start_time() {
  local stat rest
  local -a fields
  if [[ -r /proc/$1/stat ]]; then
    stat=$(<"/proc/$1/stat") || return 1
    rest=${stat##*) }             # the command name may contain spaces: cut after its ')'
    read -r -a fields <<<"$rest"  # fields[0] is field 3 (state), so field 22 is fields[19]
    printf '%s\n' "${fields[19]}"
  else
    local t
    t=$(ps -o lstart= -p "$1" 2>/dev/null) || return 1
    [[ -n $t ]] || return 1
    printf '%s\n' "${t// /_}"
  fi
}

# True while process $1 exists and is not a zombie.
proc_alive() {
  kill -0 "$1" 2>/dev/null || return 1
  local state=""
  if [[ -r /proc/$1/stat ]]; then
    local stat
    stat=$(<"/proc/$1/stat") 2>/dev/null || return 1
    state=${stat##*) }
    state=${state%% *}
  else
    state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  fi
  [[ $state != Z* ]]
}

# True while pid $1 is alive and still the process we started ($2 = its recorded start time).
proc_is_ours() {
  proc_alive "$1" || return 1
  local now
  now=$(proc_start_time "$1") || return 1
  [[ $now == "$2" ]]
}

# ---------------------------------------------------------------------------------------------
# State: $STATE_DIR/pids has one line per started process:
#   NAME PID START_TIME GROUP PORT LOG
# GROUP decides the stop order (worker, aggregator, prometheus, nats). $STATE_DIR/cluster.env
# holds KEY=VALUE facts about the running cluster (read by `stop` and `status`).
# ---------------------------------------------------------------------------------------------
PIDS_FILE=""
ENV_FILE=""

set_state_paths() {
  PIDS_FILE=$STATE_DIR/pids
  ENV_FILE=$STATE_DIR/cluster.env
}

state_get() { # KEY -> value from cluster.env (empty when absent)
  [[ -f $ENV_FILE ]] || return 0
  local k v
  while IFS='=' read -r k v; do
    if [[ $k == "$1" ]]; then
      printf '%s\n' "$v"
      return 0
    fi
  done <"$ENV_FILE"
}

# Set by spawn (not printed: spawn must run in this shell, not a $(...) subshell, so that the
# processes are this shell's children and `wait` can reap them).
SPAWNED_PID=""

# spawn NAME GROUP PORT LOG CMD...: start CMD in the background with its output in LOG and record
# it. With setsid (Linux), each process gets its own session: a Ctrl-C in the terminal reaches
# only this script, which then stops the processes in order, and a detached cluster outlives the
# terminal. (setsid does not fork here, as the child is no process-group leader: $! is the pid.)
spawn() {
  local name=$1 group=$2 port=$3 log=$4
  shift 4
  : >"$log"
  if command -v setsid >/dev/null 2>&1; then
    setsid "$@" </dev/null >>"$log" 2>&1 &
  else
    nohup "$@" </dev/null >>"$log" 2>&1 & # no setsid (macOS): at least survive a closed terminal
  fi
  SPAWNED_PID=$!
  local start=""
  # The start time is read right away; if the process already died there is nothing to stop.
  start=$(proc_start_time "$SPAWNED_PID") || start=gone
  printf '%s %s %s %s %s %s\n' "$name" "$SPAWNED_PID" "$start" "$group" "$port" "$log" >>"$PIDS_FILE"
}

# Print the last lines of a log, indented.
log_tail() {
  if [[ -s $1 ]]; then
    tail -n "${2:-20}" "$1" | sed 's/^/    | /' >&2
  fi
}

# ---------------------------------------------------------------------------------------------
# Stopping
# ---------------------------------------------------------------------------------------------
STOPPING=0

# stop_group GROUP TIMEOUT [SIGNAL]: send SIGNAL (default TERM) to every live process of GROUP,
# wait up to TIMEOUT seconds, SIGKILL what is left, then reap our children and report their exit
# status.
stop_group() {
  local group=$1 timeout=$2 sig=${3:-TERM}
  local -a pids=() names=()
  local name pid start grp port log
  [[ -f $PIDS_FILE ]] || return 0
  while read -r name pid start grp port log; do
    [[ $grp == "$group" ]] || continue
    if [[ $start != gone ]] && proc_is_ours "$pid" "$start"; then
      kill -"$sig" "$pid" 2>/dev/null || true
      pids+=("$pid")
      names+=("$name")
    fi
  done <"$PIDS_FILE"
  ((${#pids[@]} > 0)) || return 0
  say "stopping ${#pids[@]} $group process(es) (SIG$sig, up to ${timeout}s)"

  local deadline=$((SECONDS + timeout)) left i
  while :; do
    left=0
    for pid in "${pids[@]}"; do
      if proc_alive "$pid"; then left=$((left + 1)); fi
    done
    ((left > 0)) || break
    if ((SECONDS >= deadline)); then
      for i in "${!pids[@]}"; do
        if proc_alive "${pids[$i]}"; then
          say "${names[$i]} (pid ${pids[$i]}) still running after ${timeout}s: SIGKILL"
          kill -KILL "${pids[$i]}" 2>/dev/null || true
        fi
      done
      sleep 0.2
      break
    fi
    sleep 0.2
  done

  # Our own children (foreground mode): collect the exit status. Others: just report.
  local rc
  for i in "${!pids[@]}"; do
    rc=""
    if wait "${pids[$i]}" 2>/dev/null; then rc=0; else rc=$?; fi
    # `wait` on a pid that is not our child returns 127.
    if [[ $rc == 127 ]]; then
      say "  ${names[$i]} (pid ${pids[$i]}) stopped"
    else
      say "  ${names[$i]} (pid ${pids[$i]}) exited with status $rc"
    fi
  done
}

stop_all() {
  ((STOPPING == 0)) || return 0
  STOPPING=1
  trap '' INT TERM HUP
  [[ -f $PIDS_FILE ]] || {
    say "nothing to stop (no $PIDS_FILE)"
    return 0
  }
  local stop_timeout=${STOP_TIMEOUT:-60}
  # Workers first: they stop pulling jobs and finish or release what is in flight, publishing
  # records; then the aggregator (it consumes what is left); NATS last, as everyone needs it to
  # shut down cleanly.
  stop_group worker "$stop_timeout"
  stop_group aggregator "$stop_timeout"
  stop_group prometheus 20
  # nats-server shuts down cleanly on SIGINT and SIGTERM alike, but exits 1 after SIGTERM.
  stop_group nats 20 INT

  local store store_temp
  store=$(state_get STORE_DIR)
  store_temp=$(state_get STORE_TEMP)
  if [[ $store_temp == 1 && -n $store && -d $store ]]; then
    rm -rf -- "$store"
    say "removed the temporary JetStream store $store"
  fi
  rm -f -- "$PIDS_FILE" "$ENV_FILE"
  say "stopped; logs are in $(state_log_dir)"
}

STATE_LOG_DIR=""
state_log_dir() { printf '%s\n' "${STATE_LOG_DIR:-$STATE_DIR/logs}"; }

# True when the state directory lists a process that is still running.
cluster_running() {
  [[ -f $PIDS_FILE ]] || return 1
  local name pid start grp port log
  while read -r name pid start grp port log; do
    if [[ $start != gone ]] && proc_is_ours "$pid" "$start"; then return 0; fi
  done <"$PIDS_FILE"
  return 1
}

# ---------------------------------------------------------------------------------------------
# status
# ---------------------------------------------------------------------------------------------
cmd_status() {
  [[ -f $PIDS_FILE ]] || {
    say "no cluster recorded in $STATE_DIR"
    return 1
  }
  printf 'NATS:       %s\n' "$(state_get NATS_URL)"
  local prom
  prom=$(state_get PROMETHEUS_URL)
  [[ -z $prom ]] || printf 'Prometheus: %s\n' "$prom"
  printf 'Results:    %s\n' "$(state_get RESULTS_DIR)"
  printf '%-28s %-8s %-8s %-6s %s\n' PROCESS PID STATE READY LOG
  local name pid start grp port log st ready any=1
  while read -r name pid start grp port log; do
    ready=-
    if [[ $start != gone ]] && proc_is_ours "$pid" "$start"; then
      st=running
      any=0
      if [[ $grp == worker || $grp == aggregator ]]; then
        if [[ $(http_code "$port" /readyz) == 200 ]]; then ready=yes; else ready=no; fi
      fi
    else
      st=gone
    fi
    printf '%-28s %-8s %-8s %-6s %s\n' "$name" "$pid" "$st" "$ready" "$log"
  done <"$PIDS_FILE"
  return "$any"
}

# ---------------------------------------------------------------------------------------------
# start
# ---------------------------------------------------------------------------------------------
RESERVED_PORTS=""
DETACHED_OK=0
PROM_STARTED=0

on_signal() { # SIGNAL_NAME EXIT_CODE
  say "SIG$1 received"
  stop_all
  exit "$2"
}

on_exit() {
  local rc=$?
  # A detached cluster that started fine keeps running; anything else is stopped.
  if ((DETACHED_OK == 0)); then stop_all; fi
  exit "$rc"
}

# Wait until GET /readyz answers 200 on every sage process, or fail.
wait_ready() {
  local timeout=$1
  local deadline=$((SECONDS + timeout))
  local name pid start grp port log pending
  while :; do
    pending=""
    while read -r name pid start grp port log; do
      [[ $grp == worker || $grp == aggregator ]] || continue
      if [[ $start == gone ]] || ! proc_alive "$pid"; then
        say "$name exited during start-up; the end of $log:"
        log_tail "$log"
        return 1
      fi
      [[ $(http_code "$port" /readyz) == 200 ]] || pending="$pending $name"
    done <"$PIDS_FILE"
    [[ -n $pending ]] || return 0
    if ((SECONDS >= deadline)); then
      say "not ready after ${timeout}s:$pending (GET /readyz != 200); see their logs in $LOG_DIR"
      return 1
    fi
    sleep 0.5
  done
}

# Wait until process $1 (pid $2, log $3) answers 200 on 127.0.0.1:$4$5.
wait_http() {
  local name=$1 pid=$2 log=$3 port=$4 path=$5 timeout=${6:-30}
  local deadline=$((SECONDS + timeout))
  while [[ $(http_code "$port" "$path") != 200 ]]; do
    if ! proc_alive "$pid"; then
      say "$name exited during start-up; the end of $log:"
      log_tail "$log"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      say "$name did not answer GET $path on port $port within ${timeout}s; the end of $log:"
      log_tail "$log"
      return 1
    fi
    sleep 0.2
  done
}

json_escape() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  printf '%s' "$s"
}

# Write Prometheus file_sd lists for the sage processes of GROUP (worker|aggregator) to FILE.
write_targets() {
  local group=$1 file=$2 first=1 name pid start grp port log roles
  {
    printf '[\n'
    while read -r name pid start grp port log; do
      [[ $grp == "$group" ]] || continue
      roles=${PROCESS_ROLES[$name]:-}
      roles=${roles//,/_} # label-value safe, as the Kubernetes Services' sage-roles label
      ((first)) || printf ',\n'
      first=0
      printf '  {"targets": ["127.0.0.1:%s"], "labels": {"process": "%s", "roles": "%s"}}' \
        "$port" "$(json_escape "$name")" "$(json_escape "$roles")"
    done <"$PIDS_FILE"
    printf '\n]\n'
  } >"$file.tmp"
  mv -f -- "$file.tmp" "$file" # atomic: Prometheus never reads a half-written file
}

declare -A PROCESS_ROLES=()

# start_worker NAME ROLES [EXTRA ARGS...]
start_worker() {
  local name=$1 roles=$2
  shift 2
  local port
  port=$(next_free_port "$METRICS_PORT") || die "no free metrics port from $METRICS_PORT"
  RESERVED_PORTS="$RESERVED_PORTS $port"
  local -a args=(worker --nats "$NATS_URL" --roles "$roles" --metrics-addr "127.0.0.1:$port")
  if [[ -n $CONCURRENCY && ,$roles, == *,dialogue,* ]]; then
    args+=(--concurrency "$CONCURRENCY")
  fi
  args+=("$@")
  PROCESS_ROLES[$name]=$roles
  spawn "$name" worker "$port" "$LOG_DIR/$name.log" "$SAGE_BIN" "${args[@]}"
  say "started $name (pid $SPAWNED_PID, roles $roles$([[ $# -eq 0 ]] || printf ', %s' "$*"), metrics :$port)"
}

cmd_start() {
  # ---- options resolved (flags were parsed into these variables by main) ----
  local w
  for w in WORKERS WORKERS_DIALOGUE WORKERS_USER WORKERS_SERVICE WORKERS_JUDGE WORKERS_RULE; do
    [[ -z ${!w} ]] || is_uint "${!w}" || die "$w must be a whole number, got '${!w}'"
  done
  # Default layout: one worker per role, unless --workers/WORKERS asks for all-role workers.
  local per_role_default=1
  [[ -z $WORKERS || $WORKERS == 0 ]] || per_role_default=0
  WORKERS=${WORKERS:-0}
  WORKERS_DIALOGUE=${WORKERS_DIALOGUE:-$per_role_default}
  WORKERS_USER=${WORKERS_USER:-$per_role_default}
  WORKERS_SERVICE=${WORKERS_SERVICE:-$per_role_default}
  WORKERS_JUDGE=${WORKERS_JUDGE:-$per_role_default}
  WORKERS_RULE=${WORKERS_RULE:-$per_role_default}
  local total=$((WORKERS + WORKERS_DIALOGUE + WORKERS_USER + WORKERS_SERVICE + WORKERS_JUDGE + WORKERS_RULE))
  ((total > 0)) || die "no workers asked for"
  for w in METRICS_PORT READY_TIMEOUT STOP_TIMEOUT; do
    is_uint "${!w}" || die "$w must be a whole number, got '${!w}'"
  done
  [[ -z $CONCURRENCY ]] || is_uint "$CONCURRENCY" || die "CONCURRENCY must be a whole number"

  # ---- the binary ----
  if [[ $SAGE_BIN != /* && ! -e $SAGE_BIN && -e $REPO_ROOT/$SAGE_BIN ]]; then
    SAGE_BIN=$REPO_ROOT/$SAGE_BIN
  fi
  [[ -x $SAGE_BIN ]] || die "no executable sage binary at '$SAGE_BIN': run \`cargo build --release\` or set SAGE_BIN"
  SAGE_BIN=$(abspath "$SAGE_BIN")
  local sub
  for sub in worker aggregator; do
    "$SAGE_BIN" "$sub" --help >/dev/null 2>&1 ||
      die "'$SAGE_BIN $sub --help' fails: this binary has no distributed mode ('$sub' subcommand)"
  done
  if [[ -z $NATS_URL ]]; then
    command -v nats-server >/dev/null 2>&1 ||
      die "nats-server is not on PATH (apt-get install nats-server, or pass --nats-url URL)"
  fi

  # ---- state directory ----
  mkdir -p -- "$STATE_DIR"
  STATE_DIR=$(cd "$STATE_DIR" && pwd)
  set_state_paths
  if cluster_running; then
    die "a cluster from $STATE_DIR is still running: \`$0 stop\` first (or use --state-dir)"
  fi
  rm -f -- "$PIDS_FILE" "$ENV_FILE"
  LOG_DIR=$(abspath "${LOG_DIR:-$STATE_DIR/logs}")
  STATE_LOG_DIR=$LOG_DIR
  RESULTS_DIR=$(abspath "$RESULTS_DIR")
  mkdir -p -- "$LOG_DIR" "$RESULTS_DIR"

  # From here on, whatever happens, what was started gets stopped (unless detached and ready).
  trap 'on_signal INT 130' INT
  trap 'on_signal TERM 143' TERM
  trap 'on_signal HUP 129' HUP
  trap on_exit EXIT

  # ---- NATS ----
  local store_temp=0 start_nats=0
  if [[ -z $NATS_URL ]]; then
    start_nats=1
    if [[ -n $NATS_PORT ]]; then
      is_uint "$NATS_PORT" || die "NATS_PORT must be a port number"
      ! port_in_use "$NATS_PORT" || die "NATS port $NATS_PORT is taken (leave --nats-port out to pick a free one)"
    else
      NATS_PORT=$(next_free_port 4222) || die "no free port for NATS"
      [[ $NATS_PORT == 4222 ]] || say "port 4222 is taken: NATS listens on $NATS_PORT"
    fi
    RESERVED_PORTS="$RESERVED_PORTS $NATS_PORT"
    if [[ -n $NATS_HTTP_PORT ]]; then
      is_uint "$NATS_HTTP_PORT" || die "NATS_HTTP_PORT must be a port number"
      ! port_in_use "$NATS_HTTP_PORT" || die "NATS monitoring port $NATS_HTTP_PORT is taken"
    else
      NATS_HTTP_PORT=$(next_free_port 8222) || die "no free port for the NATS monitor"
    fi
    RESERVED_PORTS="$RESERVED_PORTS $NATS_HTTP_PORT"
    if [[ -z $STORE_DIR ]]; then
      STORE_DIR=$STATE_DIR/jetstream
      store_temp=1
      rm -rf -- "$STORE_DIR"
    fi
    STORE_DIR=$(abspath "$STORE_DIR")
    mkdir -p -- "$STORE_DIR"
    NATS_URL=nats://127.0.0.1:$NATS_PORT
  fi
  {
    printf 'NATS_URL=%s\n' "$NATS_URL"
    printf 'STORE_DIR=%s\n' "$STORE_DIR"
    printf 'STORE_TEMP=%s\n' "$store_temp"
    printf 'LOG_DIR=%s\n' "$LOG_DIR"
    printf 'RESULTS_DIR=%s\n' "$RESULTS_DIR"
  } >"$ENV_FILE"

  if ((start_nats)); then
    local conf=$STATE_DIR/nats.conf
    cat >"$conf" <<EOF
# Written by deploy/local-cluster.sh; regenerated at every start.
server_name: sage-local
host: 127.0.0.1
port: $NATS_PORT
http: "127.0.0.1:$NATS_HTTP_PORT"
# Dialogue records with every turn can be large; the default limit is 1MB.
max_payload: $NATS_MAX_PAYLOAD
jetstream {
  store_dir: "$STORE_DIR"
}
EOF
    spawn nats nats "$NATS_PORT" "$LOG_DIR/nats.log" nats-server -c "$conf"
    local nats_pid=$SPAWNED_PID
    wait_http nats "$nats_pid" "$LOG_DIR/nats.log" "$NATS_HTTP_PORT" /healthz 30 ||
      die "nats-server did not start"
    say "started nats-server (pid $nats_pid, $NATS_URL, JetStream store $STORE_DIR, monitor http://127.0.0.1:$NATS_HTTP_PORT)"
  else
    say "using the NATS server at $NATS_URL (JetStream must be enabled)"
  fi

  # ---- workers ----
  local i role model
  local -a models=()
  if [[ -n $SERVICE_MODELS ]]; then
    IFS=',' read -r -a models <<<"$SERVICE_MODELS"
  fi
  for ((i = 1; i <= WORKERS; i++)); do
    start_worker "worker-all-$i" "$(IFS=,; printf '%s' "${ROLES[*]}")"
  done
  for role in "${ROLES[@]}"; do
    local var="WORKERS_${role^^}"
    local n=${!var}
    if [[ $role == service && ${#models[@]} -gt 0 ]]; then
      for model in "${models[@]}"; do
        [[ -n $model ]] || continue
        for ((i = 1; i <= n; i++)); do
          start_worker "worker-service-${model//[^A-Za-z0-9._-]/_}-$i" service --model "$model"
        done
      done
    else
      for ((i = 1; i <= n; i++)); do
        start_worker "worker-$role-$i" "$role"
      done
    fi
  done

  # ---- aggregator ----
  local agg_port
  agg_port=$(next_free_port "$METRICS_PORT") || die "no free metrics port from $METRICS_PORT"
  RESERVED_PORTS="$RESERVED_PORTS $agg_port"
  PROCESS_ROLES[aggregator]=aggregator
  spawn aggregator aggregator "$agg_port" "$LOG_DIR/aggregator.log" \
    "$SAGE_BIN" aggregator --nats "$NATS_URL" --out "$RESULTS_DIR" --metrics-addr "127.0.0.1:$agg_port"
  say "started aggregator (pid $SPAWNED_PID, results in $RESULTS_DIR, metrics :$agg_port)"

  # ---- Prometheus ----
  local prom_dir=$STATE_DIR/prometheus
  mkdir -p -- "$prom_dir/targets"
  write_targets worker "$prom_dir/targets/sage-worker.json"
  write_targets aggregator "$prom_dir/targets/sage-aggregator.json"
  if [[ $PROMETHEUS != 0 ]] && command -v prometheus >/dev/null 2>&1; then
    if [[ -n $PROMETHEUS_PORT ]]; then
      is_uint "$PROMETHEUS_PORT" || die "PROMETHEUS_PORT must be a port number"
      ! port_in_use "$PROMETHEUS_PORT" || die "Prometheus port $PROMETHEUS_PORT is taken"
    else
      PROMETHEUS_PORT=$(next_free_port 9090) || die "no free port for Prometheus"
    fi
    RESERVED_PORTS="$RESERVED_PORTS $PROMETHEUS_PORT"
    cp -f -- "$SCRIPT_DIR/prometheus.yml" "$prom_dir/prometheus.yml"
    cp -f -- "$SCRIPT_DIR/alerts.yml" "$prom_dir/alerts.yml" # its rule_files
    rm -rf -- "$prom_dir/data"
    spawn prometheus prometheus "$PROMETHEUS_PORT" "$LOG_DIR/prometheus.log" \
      prometheus --config.file="$prom_dir/prometheus.yml" --storage.tsdb.path="$prom_dir/data" \
      --web.listen-address="127.0.0.1:$PROMETHEUS_PORT"
    local prom_pid=$SPAWNED_PID
    wait_http prometheus "$prom_pid" "$LOG_DIR/prometheus.log" "$PROMETHEUS_PORT" /-/ready 60 ||
      die "Prometheus did not start"
    printf 'PROMETHEUS_URL=%s\n' "http://127.0.0.1:$PROMETHEUS_PORT" >>"$ENV_FILE"
    PROM_STARTED=1
    say "started Prometheus (pid $prom_pid, http://127.0.0.1:$PROMETHEUS_PORT, targets in $prom_dir/targets)"
  elif [[ $PROMETHEUS != 0 ]]; then
    say "prometheus is not on PATH: not started (targets written to $prom_dir/targets all the same)"
  fi

  # ---- ready? ----
  if ((READY_TIMEOUT > 0)); then
    say "waiting up to ${READY_TIMEOUT}s for every sage process to be ready (GET /readyz)"
    wait_ready "$READY_TIMEOUT" || die "the cluster did not become ready; stopping it"
  fi

  print_summary

  if ((DETACH)); then
    DETACHED_OK=1
    say "detached: \`$0 stop${STATE_DIR_ARG}\` stops it"
    return 0
  fi

  say "running; Ctrl-C stops everything"
  monitor
}

print_summary() {
  local name pid start grp port log url
  printf '\nSAGE local cluster (state in %s)\n' "$STATE_DIR"
  printf '  NATS        %s\n' "$NATS_URL"
  if ((PROM_STARTED)); then printf '  Prometheus  http://127.0.0.1:%s\n' "$PROMETHEUS_PORT"; fi
  printf '  Results     %s\n' "$RESULTS_DIR"
  printf '  Logs        %s\n\n' "$LOG_DIR"
  printf '  %-30s %-8s %s\n' PROCESS PID METRICS
  while read -r name pid start grp port log; do
    url=-
    [[ $grp == worker || $grp == aggregator ]] && url="http://127.0.0.1:$port/metrics"
    printf '  %-30s %-8s %s\n' "$name" "$pid" "$url"
  done <"$PIDS_FILE"
  printf '\nSubmit a run:  %s sweep --nats %s --config examples/run.yaml --follow\n' "$SAGE_BIN" "$NATS_URL"
  printf 'Progress:      %s status --nats %s\n\n' "$SAGE_BIN" "$NATS_URL"
}

# Foreground: report processes that die; stop everything when no sage process is left.
monitor() {
  local -A reported=()
  local name pid start grp port log alive_sage
  while :; do
    alive_sage=0
    while read -r name pid start grp port log; do
      if [[ $start != gone ]] && proc_alive "$pid"; then
        [[ $grp == nats || $grp == prometheus ]] || alive_sage=$((alive_sage + 1))
      elif [[ -z ${reported[$name]:-} ]]; then
        reported[$name]=1
        local rc=0
        wait "$pid" 2>/dev/null || rc=$?
        say "$name (pid $pid) exited unexpectedly (status $rc); the end of $log:"
        log_tail "$log" 10
      fi
    done <"$PIDS_FILE"
    if ((alive_sage == 0)); then
      say "no sage process is left: stopping"
      exit 1
    fi
    # `sleep & wait` so that a signal is handled at once, not after the sleep.
    sleep 2 &
    wait $! || true
  done
}

# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------
main() {
  local cmd=start
  case ${1:-} in
    start | stop | status)
      cmd=$1
      shift
      ;;
  esac

  # Defaults, overridable from the environment.
  SAGE_BIN=${SAGE_BIN:-target/release/sage}
  WORKERS=${WORKERS:-}
  WORKERS_DIALOGUE=${WORKERS_DIALOGUE:-}
  WORKERS_USER=${WORKERS_USER:-}
  WORKERS_SERVICE=${WORKERS_SERVICE:-}
  WORKERS_JUDGE=${WORKERS_JUDGE:-}
  WORKERS_RULE=${WORKERS_RULE:-}
  SERVICE_MODELS=${SERVICE_MODELS:-}
  CONCURRENCY=${CONCURRENCY:-}
  NATS_PORT=${NATS_PORT:-}
  NATS_HTTP_PORT=${NATS_HTTP_PORT:-}
  NATS_URL=${NATS_URL:-}
  NATS_MAX_PAYLOAD=${NATS_MAX_PAYLOAD:-8MB}
  STORE_DIR=${STORE_DIR:-}
  RESULTS_DIR=${RESULTS_DIR:-results}
  LOG_DIR=${LOG_DIR:-}
  STATE_DIR=${STATE_DIR:-${TMPDIR:-/tmp}/sage-local-cluster-$(id -un)}
  STATE_DIR_ARG=""
  METRICS_PORT=${METRICS_PORT:-9464}
  PROMETHEUS_PORT=${PROMETHEUS_PORT:-}
  PROMETHEUS=${PROMETHEUS:-1}
  DETACH=${DETACH:-0}
  READY_TIMEOUT=${READY_TIMEOUT:-60}
  STOP_TIMEOUT=${STOP_TIMEOUT:-60}

  local -a models=()
  [[ -z $SERVICE_MODELS ]] || models=("$SERVICE_MODELS")
  local flag_models=0

  need_arg() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value"; }
  while (($# > 0)); do
    case $1 in
      -h | --help) usage; exit 0 ;;
      --workers) need_arg "$@"; WORKERS=$2; shift ;;
      --dialogue) need_arg "$@"; WORKERS_DIALOGUE=$2; shift ;;
      --user) need_arg "$@"; WORKERS_USER=$2; shift ;;
      --service) need_arg "$@"; WORKERS_SERVICE=$2; shift ;;
      --judge) need_arg "$@"; WORKERS_JUDGE=$2; shift ;;
      --rule) need_arg "$@"; WORKERS_RULE=$2; shift ;;
      --service-model)
        need_arg "$@"
        if ((flag_models == 0)); then models=(); flag_models=1; fi # flags replace the env list
        models+=("$2")
        shift
        ;;
      --concurrency) need_arg "$@"; CONCURRENCY=$2; shift ;;
      --nats-port) need_arg "$@"; NATS_PORT=$2; shift ;;
      --nats-http-port) need_arg "$@"; NATS_HTTP_PORT=$2; shift ;;
      --nats-url) need_arg "$@"; NATS_URL=$2; shift ;;
      --store-dir) need_arg "$@"; STORE_DIR=$2; shift ;;
      --results-dir) need_arg "$@"; RESULTS_DIR=$2; shift ;;
      --log-dir) need_arg "$@"; LOG_DIR=$2; shift ;;
      --state-dir) need_arg "$@"; STATE_DIR=$2; STATE_DIR_ARG=" --state-dir $(printf '%q' "$2")"; shift ;;
      --metrics-port) need_arg "$@"; METRICS_PORT=$2; shift ;;
      --prometheus-port) need_arg "$@"; PROMETHEUS_PORT=$2; shift ;;
      --no-prometheus) PROMETHEUS=0 ;;
      --detach) DETACH=1 ;;
      --ready-timeout) need_arg "$@"; READY_TIMEOUT=$2; shift ;;
      --stop-timeout) need_arg "$@"; STOP_TIMEOUT=$2; shift ;;
      *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
  done
  SERVICE_MODELS=$(IFS=,; printf '%s' "${models[*]}")
  [[ $DETACH == 0 || $DETACH == 1 ]] || die "DETACH must be 0 or 1"
  set_state_paths
  STATE_LOG_DIR=$(state_get LOG_DIR)

  case $cmd in
    start) cmd_start ;;
    stop)
      is_uint "$STOP_TIMEOUT" || die "STOP_TIMEOUT must be a whole number"
      stop_all
      ;;
    status) cmd_status ;;
  esac
}

main "$@"
