// loopr.toml: the daemon's settings. Every key has a default that gives a
// working single-user setup, so the file is optional and holds only what the
// user changes (config/loopr.example.toml lists every key). A mistake — bad
// syntax, an unknown table or key, a wrong type, a value out of range — is a
// loopr::ConfigError "FILE:LINE: KEY: what is wrong", and the daemon refuses
// to start on it.
//
// Paths in the file must be absolute or start with "~/"; "~" is expanded from
// HOME when the file is loaded. API keys never appear here: a provider names
// the environment variable or the key file that holds its key.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/catalog.hpp"
#include "config/environment.hpp"
#include "config/repository_settings.hpp"

namespace loopr::config {

enum class LogLevel { trace, debug, info, warn, error };
enum class SandboxMode { on, off };
// "auto": run without asking; "ask": wait for approval.approve (timeout =
// deny); "deny": refuse the call.
enum class ApprovalPolicy { automatic, ask, deny };
enum class ProviderKind { anthropic, openai, scripted };

std::string_view to_string(LogLevel level);
std::string_view to_string(SandboxMode mode);
std::string_view to_string(ApprovalPolicy policy);
std::string_view to_string(ProviderKind kind);

inline constexpr std::string_view kLoopTypes[] = {"plan", "spec", "phase", "code"};

// Where a key's value came from, for errors found after loading.
struct Origin {
  std::string file;        // empty: the built-in defaults
  std::uint32_t line = 0;  // 0 with the defaults
};

struct DaemonSettings {
  std::string socket_path;  // [daemon] socket; empty: see resolve_paths()
  std::string state_dir;    // empty: see resolve_paths()
  LogLevel log_level = LogLevel::info;
  // Cap on the bytes queued to one slow client before it is disconnected; at
  // least one maximum-size protocol line (16 MiB).
  std::int64_t max_client_queue_bytes = 64LL * 1024 * 1024;
  std::int64_t heartbeat_interval_ms = 5000;
  std::int64_t runner_restart_backoff_ms = 500;  // first delay; doubles up to 30 s
};

struct SandboxSettings {
  // "off" runs jobs without any sandbox; it must be written explicitly and
  // the daemon logs it loudly (DESIGN §7.6).
  SandboxMode mode = SandboxMode::on;
  // Folders under which a job's worktree may lie; only the job's own
  // worktree is made writable. The lane runners bind them once at start.
  // Empty: every tool call is refused, saying to set this.
  std::vector<std::string> worktree_roots;
  std::vector<std::string> read_paths;    // readable beyond system folders and the worktree
  std::vector<std::string> hidden_paths;  // made unreachable, beyond the daemon's own
  std::int64_t tmp_size_mb = 256;         // the job's private /tmp
};

// [lanes.no-net|net|heavy]. The cgroup limits are optional: unset means no
// limit, and a machine without delegated controllers reports their absence.
struct LaneSettings {
  std::int64_t slots = 1;  // concurrent jobs, ≥ 1
  bool network = false;    // always false for no-net
  // A job's memory (cgroup memory.max, or memory.limit_in_bytes on a v1
  // hierarchy); unset or 0: no limit.
  std::optional<std::int64_t> memory_mb;
  std::optional<std::int64_t> pids_max;
  std::optional<std::int64_t> cpu_weight;  // cgroup v2 cpu.weight, 1..10000
  // Resident workers that serve the file tools without a process per call
  // (runner/warm_workers.hpp): at most this many in the lane (0: a process
  // per call), each stopped after warm_worker_idle_s without a call.
  std::int64_t warm_workers = 8;
  std::int64_t warm_worker_idle_s = 60;
  // RLIMIT_AS of each job process, MiB; unset: none. Runtimes that reserve
  // address space up front (Node's WebAssembly, the JVM, ASan) fail under it.
  std::optional<std::int64_t> address_space_mb = std::nullopt;
};

struct ApprovalSettings {
  ApprovalPolicy default_policy = ApprovalPolicy::automatic;  // key "default"
  std::int64_t timeout_s = 300;                               // unanswered = deny
  std::map<std::string, ApprovalPolicy> tools;                // [approval.tools]
  std::map<std::string, ApprovalPolicy> lanes;                // [approval.lanes]
  // [[approval.rules]]: per-command rules for the tools that run a command
  // from their arguments (policy/command_rules.hpp), in the order written;
  // a trusted repository's file adds its own (ask and deny only).
  std::vector<policy::CommandRule> rules;
};

// The commands the heavy-lane tools build, test and validate run (sh -c);
// empty: the tool reports that no command is configured.
struct CommandSettings {
  std::string build;
  std::string test;
  std::string validate;
  // Lint after edit (opt-in): after a loop's edit_file or write_file of a
  // file matching `lint_files` (glob patterns on the path, "*.py"; empty:
  // every file), `lint` runs on the heavy lane with {files} replaced by the
  // edited path (quoted; appended when the command has no {files}), and the
  // problems it reports that the file's previous lint did not are added to
  // the tool result the model reads.
  std::string lint;
  std::vector<std::string> lint_files;
};

// [context]: what a loop's model sees, and how its context stays bounded.
struct ContextSettings {
  // Before each model call the engine estimates the request's tokens; past
  // this share of the provider's context_window the iteration ends with a
  // handoff note that the next iteration's fresh context carries.
  std::int64_t handoff_percent = 70;
  // Most bytes one tool result puts into the conversation (head and tail
  // kept, the whole result stays in the journal, readable with read_output);
  // [context.tool_result_max_bytes_by_tool] sets it per tool.
  std::int64_t tool_result_max_bytes = 16384;
  std::map<std::string, std::int64_t> tool_result_max_bytes_by_tool;
  // The repository's instructions for agents, first found wins (relative to
  // the worktree's top), and how much of it the first message carries.
  std::vector<std::string> instructions_files = {"AGENTS.md", "CLAUDE.md"};
  std::int64_t instructions_max_bytes = 16384;
  // The file tree in the first message (tracked files, .gitignore honoured).
  std::int64_t tree_max_bytes = 6144;

  std::int64_t tool_result_cap(const std::string& tool) const {
    auto it = tool_result_max_bytes_by_tool.find(tool);
    return it == tool_result_max_bytes_by_tool.end() ? tool_result_max_bytes : it->second;
  }
};

// [web_fetch]: networks web_fetch may reach beyond the public internet
// (CIDR ranges such as "10.20.0.0/16" or single addresses; empty: none, so
// loopback, private and link-local targets are refused). The daemon hands
// them to every web_fetch call; a model cannot set them.
struct WebFetchSettings {
  std::vector<std::string> allowed_networks;
};

// [egress]: what jobs of lanes with network (net, heavy) may connect to
// through looprd's egress proxy (DESIGN §7.9) — every connection they make,
// web_fetch's included. allowed_networks: CIDR ranges or single addresses
// reachable beyond the public internet by every job of those lanes
// ([web_fetch] and [web_search] allowed_networks add to it for those tools'
// calls only); port: the proxy's port on each lane's own
// 127.0.0.1. [egress.lanes.net] / [egress.lanes.heavy]: optional domain
// lists, exact names or "*.suffix"; deny wins; an empty allow list allows
// every name.
struct EgressLaneSettings {
  std::vector<std::string> allow_domains;
  std::vector<std::string> deny_domains;
};

struct EgressSettings {
  std::vector<std::string> allowed_networks;
  std::int64_t port = 3128;
  std::map<std::string, EgressLaneSettings> lanes;  // by lane name
};

// [web_search]: the provider web_search asks. `provider` names one of the
// four kinds ("brave", "google", "serper", "searxng"); empty: web_search is
// not configured and says which keys to set. Each kind has its table
// ([web_search.brave] ...) with defaults for base_url and api_key_env; the
// key itself comes from that variable of looprd's environment or from
// key_file, and the daemon hands it to the job only (SECURITY.md class 26).
struct SearchProviderSettings {
  std::string base_url;     // http(s); searxng: the instance, required
  std::string api_key_env;  // name of the variable holding the key
  std::string key_file;     // or a file holding it (absolute); tried after api_key_env
  std::string cx;           // google: the Programmable Search Engine id
};

struct WebSearchSettings {
  std::string provider;
  std::map<std::string, SearchProviderSettings> providers;  // every kind, with its defaults
  // Networks beyond the public internet the provider may be reached on (a
  // self-hosted SearXNG on the LAN), as [web_fetch] allowed_networks.
  std::vector<std::string> allowed_networks;
  std::int64_t max_retries = 3;             // after the first attempt; 429, 5xx, transport
  std::int64_t retry_base_delay_ms = 500;   // first back-off; doubles, with jitter
  std::int64_t retry_max_delay_ms = 10000;  // cap of one back-off (retry-after too)
};

struct LoopSettings {
  std::vector<std::string> tools;  // offered to the model, in this order
  // A built-in template name ("plan", "spec", "phase", "code") or the path of
  // a template file (absolute after loading).
  std::string prompt_template;
  // Run on the heavy lane after each iteration; empty: [commands] validate.
  std::string validation_command;
  std::int64_t max_iterations = 10;
};

struct ProviderSettings {
  ProviderKind kind = ProviderKind::anthropic;
  std::string base_url;     // http(s); empty for scripted
  std::string model;        // empty for scripted
  std::string api_key_env;  // name of the variable holding the key
  std::string key_file;     // or a file holding it (absolute); tried after api_key_env
  std::int64_t max_retries = 3;
  std::string script;  // scripted: the recorded session file (absolute)
  // Server-sent events: text reaches clients live; false sends plain JSON.
  bool stream = true;
  // Tokens the model accepts in one call; 0: the kind's default (Anthropic
  // 200000, OpenAI-compatible 128000, scripted 200000; see window()). Local
  // servers often need this set.
  std::int64_t context_window = 0;
  // Output tokens one call may produce. Unset in loopr.toml: what fits the
  // window, default_max_tokens(window()) = min(16384, window / 8), at least
  // 1024 — worked out again after each file is merged, so a context_window
  // set later counts. Set: kept, and refused (naming the key) when it is not
  // below window(): the input needs room too.
  std::int64_t max_tokens = 16384;
  // Anthropic: cache_control on the system prompt, the tool definitions and
  // the conversation's last messages (llm/anthropic_wire.hpp).
  bool prompt_caching = true;
  // Kind "openai" only (refused for the others): the request field that
  // carries max_tokens, "max_tokens" or "max_completion_tokens". Empty
  // (unset): by base_url, see max_tokens_field_to_send().
  std::string max_tokens_field;
  // Kind "openai" only (refused for the others): sent as reasoning_effort
  // ("minimal", "low", "medium", "high") with each request, for reasoning
  // models; empty: not sent.
  std::string reasoning_effort;
  std::int64_t connect_timeout_ms = 10000;
  std::int64_t first_byte_timeout_ms = 120000;  // request sent -> response head
  std::int64_t idle_timeout_ms = 60000;         // longest silence inside a stream
  std::int64_t retry_base_delay_ms = 1000;      // first back-off; doubles, with jitter
  std::int64_t retry_max_delay_ms = 60000;      // cap of one back-off (retry-after too)
  // Model calls of all loops in flight at once to this provider; a loop
  // waits for a slot before its call. 0: no limit.
  std::int64_t max_in_flight = 4;

  // context_window, or the kind's default when it is 0.
  std::int64_t window() const;
  // max_tokens_field, or when unset: "max_completion_tokens" when base_url's
  // host is api.openai.com (its reasoning models refuse max_tokens), else
  // "max_tokens" (what llama.cpp's server, vLLM and Ollama take).
  std::string max_tokens_field_to_send() const;
};

inline constexpr std::int64_t kAnthropicContextWindow = 200000;
inline constexpr std::int64_t kOpenAiContextWindow = 128000;
inline constexpr std::int64_t kScriptedContextWindow = 200000;

// The context window of a provider of `kind` whose context_window is 0.
std::int64_t default_context_window(ProviderKind kind);
// The max_tokens of a provider that does not set it: min(16384, window / 8),
// at least 1024 (yet never more than half of a window under 2048 tokens).
std::int64_t default_max_tokens(std::int64_t context_window);

// [prices."MODEL"]: USD per million tokens of each class, for cost budgets.
struct ModelPrice {
  double input = 0;
  double output = 0;
  double cache_read = 0;
  double cache_write = 0;
};

// [budgets.loop] (each loop's default; loop.create may lower or raise it) and
// [budgets.global] (all loops of this state folder together, for as long as
// the store keeps them). Unset: no limit. A loop's iterations come from
// [loops.TYPE] max_iterations.
struct BudgetLimits {
  std::optional<std::int64_t> turns_per_iteration;
  std::optional<std::int64_t> tool_calls;
  std::optional<std::int64_t> wall_clock_s;
  std::optional<std::int64_t> input_tokens;
  std::optional<std::int64_t> output_tokens;
  std::optional<std::int64_t> cache_read_tokens;
  std::optional<std::int64_t> cache_write_tokens;
  std::optional<double> usd;
};

struct BudgetSettings {
  BudgetLimits loop;    // defaults: turns_per_iteration 50
  BudgetLimits global;  // defaults: none
  // [budgets.plan]: a plan's whole tree (the plan loop and every loop under
  // it) together; loop.create_plan may lower or raise it. Defaults: none.
  BudgetLimits plan;
};

// [scheduler]: how many loops run at once (0: no limit). Loops beyond the
// limits wait as `queued` ("waiting for a slot").
struct SchedulerSettings {
  std::int64_t max_running = 4;       // all loops together
  std::int64_t max_running_plan = 0;  // per type; 0: only max_running applies
  std::int64_t max_running_spec = 0;
  std::int64_t max_running_phase = 0;
  std::int64_t max_running_code = 0;
  // The per-type limit of `type` (0 for an unknown type).
  std::int64_t limit_for(const std::string& type) const;
};

// [merges]: a child's branch merged into its parent's that conflicts is
// handed to a code loop on the parent's branch with at most this many
// iterations; if it fails, the parent is `blocked`.
struct MergeSettings {
  std::int64_t resolve_max_iterations = 3;
};

// [validation]: what no loop may change to pass its validation (issue 27).
struct ValidationSettings {
  // Patterns (common/glob_pattern.hpp, relative to the repository's top; a
  // pattern matching a folder protects everything in it) of files a loop
  // may not change: its file tools refuse to write, edit or delete them, a
  // change a command makes to one is put back before the iteration is
  // committed and validated, so the validation always runs them as the
  // loop's base commit has them (loops/protected_files.hpp). A trusted
  // repository's .loopr/loopr.toml may add patterns, never remove one.
  std::vector<std::string> protected_paths;
};

// [[hooks]]: the user's own commands, run by looprd when something
// happens (hooks/, issue 27). Only the user's loopr.toml may set them: a
// repository's .loopr/loopr.toml is refused them, since a hook is a program
// the user chose to run.
struct HookSettings {
  // tool.before, tool.after, approval.needed, iteration.end, loop.end,
  // plan.awaiting_approval or worktree.created (hooks::kHookEvents).
  std::string event;
  // The tool events' filter: the hook runs for these tools only; empty: all.
  std::vector<std::string> tools;
  std::string command;          // sh -c; the event as JSON on its stdin
  std::int64_t timeout_s = 30;  // then it is killed and reported; the call goes on
  // Run by looprd as the user, outside any sandbox (e.g. to reach the
  // desktop or the network). Otherwise it runs in the no-net lane's sandbox.
  bool trusted = false;
  Origin origin;  // where it was written, for reports
};

// [loop_health]: when a loop is noticed going round in circles.
struct LoopHealthSettings {
  // The same call (tool, arguments, result) this many times in a loop.
  std::int64_t repeated_call_limit = 3;
  // Iterations in a row that change nothing and fail validation the same way.
  std::int64_t unchanged_iteration_limit = 2;
  // Malformed tool calls in a row before the iteration ends.
  std::int64_t malformed_call_limit = 3;
};

// What a new loop worktree needs before its first iteration: `include`,
// patterns of the user's checkout's ignored or untracked files brought into
// it; `setup`, a command run once in it. Set in [worktrees], per repository
// in [[repositories]] worktrees, or by a trusted .loopr/loopr.toml.
struct WorktreePrep {
  std::vector<std::string> include;
  std::string setup;
};

// [worktrees]: where loops' git worktrees are made.
struct WorktreeSettings {
  // Must lie beneath a [sandbox] worktree_roots entry; empty: ".loopr-worktrees"
  // in the first worktree root.
  std::string folder;
  // Seconds after a loop's tree is finished (it and its children merged up,
  // or ended) before its worktree is removed; the branch is kept. -1: never
  // (looprctl gc still removes them).
  std::int64_t keep_finished_s = 3600;
  WorktreePrep prep;  // include, setup
  // What include (and a child's copy of its parent's worktree) may write
  // into one new worktree, in MiB; reflinked copies cost nothing.
  std::int64_t copy_limit_mb = 16384;
};

// [memory]: the notes loops keep (memory_save and friends; issue 13).
struct MemorySettings {
  std::int64_t max_note_bytes = 16384;  // one note's text
  // Notes one user keeps for one repository, and of their own (user scope).
  std::int64_t max_notes = 1000;
};

// [oracle]: the second model the `oracle` tool consults (issue 13). Unset
// provider: the tool answers that it is not configured, naming these keys.
struct OracleSettings {
  std::string provider;                   // a key of Settings::providers; empty: no oracle
  std::string model;                      // empty: the provider's own model
  std::int64_t max_tokens = 4096;         // of the answer
  std::int64_t max_files = 8;             // files one question may attach
  std::int64_t max_file_bytes = 65536;    // of one file (more is cut, and said so)
  std::int64_t max_total_bytes = 262144;  // of every attachment together, context included
  bool configured() const { return !provider.empty(); }
};

// [notify]: who is told when a person is needed (notify/, issue 27). A
// webhook gets an HTTP POST for each approval waiting, plan at its gate,
// loop or plan ended, and budget nearly spent. The URL may hold a token (a
// Slack webhook's does): it is never logged.
struct NotifySettings {
  std::string webhook_url;   // http(s); empty: no webhook
  std::string webhook_body;  // a template (notify/notification.hpp); empty: the event as JSON
  // Freedesktop notifications on the user's session bus (D-Bus), where one
  // exists (notify/desktop_notifier.hpp).
  bool desktop = false;
  std::int64_t max_per_minute = 20;  // more in any minute are dropped, and logged (each channel)
  bool configured() const { return !webhook_url.empty(); }
};

// [cluster]: heavy-lane jobs on worker machines through NATS JetStream
// (cluster/, docs/cluster.md, issue 28). Unset nats_url: every lane runs on
// this machine's runners. No secret is ever written here: the credentials
// live in creds_file, a NATS .creds file or an nkey seed file.
// A worker label or a label a job requires: 1-64 of [A-Za-z0-9_=-], so it
// can be a token of a NATS subject.
bool cluster_label_valid(std::string_view label);
// True when a nats:// or tls:// URL's host is 127.0.0.0/8, ::1 or localhost.
bool cluster_url_is_loopback(std::string_view url);

struct ClusterSettings {
  std::string nats_url;    // nats://HOST:PORT or tls://HOST:PORT; empty: no cluster
  std::string creds_file;  // required unless the URL's host is loopback
  std::string tls_ca_file;
  std::string tls_cert_file;  // with tls_key_file: a client certificate
  std::string tls_key_file;
  std::vector<std::string> lanes = {"heavy"};  // lanes whose jobs go to workers
  // Labels every job requires of the worker that takes it ("gpu",
  // "arch=arm64"); a worker takes a job only when it has them all.
  std::vector<std::string> require_labels;
  // A job no worker started within this long runs here ("local") or fails
  // ("fail").
  std::int64_t queue_timeout_s = 60;
  std::string on_queue_timeout = "local";
  // The JetStream acknowledgement deadline: a worker that neither finishes
  // nor heartbeats within it has its job redelivered to another.
  std::int64_t ack_wait_s = 30;
  // Worker ids whose results are accepted; empty: any worker that NATS let
  // publish on loopr's subjects (its own credentials).
  std::vector<std::string> admit;
  std::string stream = "LOOPR_JOBS";  // the JetStream work-queue stream
  bool configured() const { return !nats_url.empty(); }
};

struct LlmSettings {
  std::string provider = "anthropic";  // a key of Settings::providers
  // Providers to ask a model turn of, in order, when the loop's own stays
  // overloaded or unreachable after its retries (provider_unavailable with a
  // 5xx, 529 or a broken connection; never a 4xx: a refused request would be
  // refused again, and a 429 is the provider's answer about this account).
  // Each a key of Settings::providers; a fallback answers with its own
  // [providers.NAME] model, and its turn is priced by that model. Only loops
  // on `provider` fall back (loops/loop_run.hpp, ask_model).
  std::vector<std::string> fallback;
};

struct Settings {
  DaemonSettings daemon;
  SandboxSettings sandbox;
  std::map<std::string, LaneSettings> lanes;  // exactly no-net, net, heavy
  ApprovalSettings approval;
  CommandSettings commands;
  WebFetchSettings web_fetch;
  EgressSettings egress;
  WebSearchSettings web_search;
  std::map<std::string, LoopSettings> loops;  // exactly kLoopTypes
  std::map<std::string, ProviderSettings> providers;
  LlmSettings llm;
  std::map<std::string, ModelPrice> prices;  // by model name
  BudgetSettings budgets;
  LoopHealthSettings loop_health;
  WorktreeSettings worktrees;
  SchedulerSettings scheduler;
  MergeSettings merges;
  MemorySettings memory;
  OracleSettings oracle;
  NotifySettings notify;
  ClusterSettings cluster;
  ContextSettings context;
  ValidationSettings validation;
  std::vector<HookSettings> hooks;  // [[hooks]], in the order written
  // [[repositories]]: per-repository commands and worktree needs, in the
  // order written (config/repository_settings.hpp; repos/ resolves them).
  std::vector<RepositoryEntry> repositories;
  // Dotted key ("loops.code.tools") → where a file set it; keys left at their
  // default are absent.
  std::map<std::string, Origin> origins;

  static Settings defaults();
  // defaults() with `path` merged over it; a missing file is not an error.
  static Settings load(const std::string& path, const EnvLookup& env = process_env());
  // Merges one document over these settings; all-or-nothing.
  void merge_toml(std::istream& in, const std::string& name, const EnvLookup& env);

  // Checks what needs the catalog: every tool named in [loops.*] tools and in
  // [approval.tools] exists. Throws ConfigError naming file, line and key.
  void validate_against(const Catalog& catalog) const;

  // The policy for a call of `tool`: [approval.tools], then [approval.lanes],
  // then the default. With the sandbox off, a privileged tool whose policy
  // would be "auto" only by default is "ask": auto is meant for calls that
  // run inside a lane sandbox (DESIGN §6).
  ApprovalPolicy approval_for(const ToolSpec& tool) const;
  const ProviderSettings& active_provider() const;
  // Where loop worktrees go: worktrees.folder, else <first root>/.loopr-worktrees;
  // empty when no worktree root is configured.
  std::string worktree_folder() const;
};

}  // namespace loopr::config
