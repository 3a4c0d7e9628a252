// What one code loop costs in tokens and dollars (issue 24), against the
// real looprd: its Anthropic provider talks to a ModelApiServer
// (tests/support/model_api_server.hpp) that counts every request's tokens,
// enforces a 200,000-token context window, bills Anthropic prompt caching
// (breakpoints, 20-block lookback, 5-minute entries, 1024-token floor) and
// plays a fixed 25-turn session on a sample repository the bench writes:
//   list the tree, glob, read the README and ten source files, grep, run the
//   failing test suite (~200 kB of output), grep, four edit_file calls, run
//   the suite again (passes), git diff, read an edited file, grep,
//   complete_task; the loop's validation then runs the suite.
// The session is decided by the turn number alone (and, for the edits, by
// the bugs the bench planted in the repository), never by the text looprd
// sends, so it plays the same whatever loopr renders.
//
// Per run: requests (and refusals), input tokens billed at the full price,
// at the cache-read price and at the cache-write price, output tokens, USD
// at Sonnet's prices ($3 / $15 / $0.30 / $3.75 per million input, output,
// cache read, cache write), the largest request in tokens and as a share of
// the window, whether the loop completed, and looprd's own cost figure for
// the loop. By-product: the gap between the server finishing one answer and
// the next request arriving, minus the tool's time from the journal (at_ms,
// millisecond resolution): a rough per-turn engine figure; loop_engine_bench
// measures the engine's overhead properly.
//
// Run by hand (bench/README.md), never as a timed test:
//   token_cost_bench [--runs R] [--bin-dir DIR]... [--keep]
// Each --bin-dir names a folder holding looprd, loopr-runner and loopr-tool
// (default: the bench's own folder); with several, every run plays each
// build in turn, and the medians are printed side by side.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/sample_stats.hpp"
#include "client/control_client.hpp"
#include "tests/support/model_api_server.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using loopr::client::ControlClient;
using loopr::test::ModelApiOptions;
using loopr::test::ModelApiServer;
using loopr::test::ModelCall;
using loopr::test::ModelReply;
using loopr::test::ServedRequest;
using nlohmann::json;

constexpr std::int64_t kContextWindow = 200000;
constexpr const char* kModel = "bench-model";
// Sonnet's prices, USD per million tokens.
constexpr double kInputPrice = 3.0, kOutputPrice = 15.0, kCacheReadPrice = 0.30,
                 kCacheWritePrice = 3.75;
constexpr const char* kKeyVariable = "LOOPR_BENCH_ANTHROPIC_KEY";

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "token_cost_bench: " << what << "\n";
  std::exit(1);
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

// Runs argv (PATH searched) with every stdio on /dev/null; its exit status.
int run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ---- the sample repository ----

// A bug the bench plants and the session's edit_file fixes.
struct PlantedBug {
  std::string path;
  std::string old_string;
  std::string new_string;
};

struct SampleRepo {
  std::vector<std::string> sources;  // relative paths, in the order written
  std::vector<PlantedBug> bugs;
};

// A deterministic generator (LCG): the repository is the same on every run.
class Lcg {
 public:
  explicit Lcg(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return state_ >> 33;
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }

 private:
  std::uint64_t state_;
};

const char* const kVerbs[] = {"load",   "parse",  "merge", "filter", "rank",  "collect",
                              "update", "render", "check", "split",  "count", "resolve"};
const char* const kNouns[] = {"orders",  "items", "prices", "stock",  "labels",  "customers",
                              "batches", "rules", "events", "totals", "records", "limits"};

// One plausible Python function, ~400-700 bytes.
std::string filler_function(Lcg& lcg, std::size_t index) {
  const std::string verb = kVerbs[lcg.below(std::size(kVerbs))];
  const std::string noun = kNouns[lcg.below(std::size(kNouns))];
  const std::string name = verb + "_" + noun + "_" + std::to_string(index);
  const std::size_t a = 2 + lcg.below(9), b = 1 + lcg.below(50), c = 10 + lcg.below(90);
  std::ostringstream out;
  out << "\n\ndef " << name << "(entries, limit=" << c << ", strict=False):\n"
      << "    \"\"\"" << verb << " the " << noun << " of `entries`; at most `limit` results.\n\n"
      << "    With `strict`, an entry without a \"" << noun << "\" field raises KeyError\n"
      << "    instead of being skipped.\n    \"\"\"\n"
      << "    result = []\n"
      << "    for position, entry in enumerate(entries):\n"
      << "        if position >= limit:\n"
      << "            break\n"
      << "        if \"" << noun << "\" not in entry:\n"
      << "            if strict:\n"
      << "                raise KeyError(\"" << noun << " missing at %d\" % position)\n"
      << "            continue\n"
      << "        value = entry[\"" << noun << "\"] * " << a << " + " << b << "\n"
      << "        if value % " << a << " == 0:\n"
      << "            value = value // " << a << "\n"
      << "        result.append((position, value))\n"
      << "    return result\n";
  return out.str();
}

// The modules: name, size in bytes, and the bug planted in it (if any).
struct ModuleSpec {
  const char* name;
  std::size_t bytes;
  const char* good;  // the correct line, as the fix writes it
  const char* bad;   // the planted line
};

constexpr ModuleSpec kModules[] = {
    {"config.py", 2200, nullptr, nullptr},
    {"parser.py", 6100, "    separator = \";\"", "    separator = \",\""},
    {"tokenizer.py", 4300, nullptr, nullptr},
    {"stats.py", 5200, "    return total / count", "    return total / (count + 1)"},
    {"storage.py", 12100, nullptr, nullptr},
    {"cache.py", 3500, nullptr, nullptr},
    {"http_client.py", 9800, nullptr, nullptr},
    {"retry.py", 3100, "    delay = base * 2 ** attempt", "    delay = base * 2 * attempt"},
    {"scheduler.py", 7400, nullptr, nullptr},
    {"report.py", 11200, nullptr, nullptr},
    {"cli.py", 2600, nullptr, nullptr},
    {"models.py", 8300, nullptr, nullptr},
    {"validators.py", 4700, nullptr, nullptr},
    {"formatting.py", 5600, "    return text.rjust(width)", "    return text.ljust(width)"},
    {"util.py", 10300, nullptr, nullptr},
};

// The function holding a planted line, so the line sits in real code.
std::string buggy_function(const ModuleSpec& module) {
  const std::string name = module.name;
  const std::string line = module.bad;
  if (name == "parser.py") {
    return "\n\ndef split_fields(line):\n    \"\"\"The fields of one export line.\"\"\"\n" + line +
           "\n    return [field.strip() for field in line.split(separator)]\n";
  }
  if (name == "stats.py") {
    return "\n\ndef mean(values):\n    \"\"\"The arithmetic mean of `values` (0 for none).\"\"\"\n"
           "    total = sum(values)\n    count = len(values)\n    if count == 0:\n"
           "        return 0\n" +
           line + "\n";
  }
  if (name == "retry.py") {
    return "\n\ndef backoff_delay(attempt, base=0.5, cap=30.0):\n"
           "    \"\"\"Seconds to wait before retry number `attempt` (0-based).\"\"\"\n" +
           line + "\n    return min(delay, cap)\n";
  }
  return "\n\ndef pad_cell(text, width):\n    \"\"\"`text` right-aligned in `width` "
         "columns.\"\"\"\n"
         "    text = str(text)\n" +
         line + "\n";
}

const char* kReadme = R"(# shopkeeper

A small inventory and order toolkit: it loads exports from the shop's
back office (semicolon-separated), keeps stock levels, computes statistics
for the weekly report, and talks to the supplier's HTTP API with retries.

## Layout

- `src/shopkeeper/parser.py` reads export lines (fields separated by `;`).
- `src/shopkeeper/stats.py` holds the statistics of the weekly report.
- `src/shopkeeper/retry.py` computes back-off delays (exponential, capped).
- `src/shopkeeper/formatting.py` lays out the report's table (numbers are
  right-aligned).
- `src/shopkeeper/storage.py`, `models.py`, `cache.py`: the stock database.
- `src/shopkeeper/http_client.py`, `scheduler.py`: supplier synchronisation.
- `src/shopkeeper/report.py`, `cli.py`: the weekly report and its command.

## Tests

    sh run_tests.sh

runs the whole suite (about 2,500 cases) and prints one line per case. It
exits 0 when every case passes.

## Conventions

Functions take plain lists and dicts; nothing here does I/O except
`storage.py` and `http_client.py`. Keep functions small and documented;
every public function has a docstring saying what it returns.
)";

// The suite: ~200 kB of per-case lines, then the checks of the four planted
// bugs; exit 1 while any is unfixed.
std::string test_script(const std::vector<PlantedBug>& bugs) {
  std::ostringstream out;
  out << "#!/bin/sh\n# The shopkeeper test suite.\nfail=0\ni=1\n"
      << "while [ $i -le 2500 ]; do\n"
      << "  printf 'tests/test_shopkeeper.py::test_case[%04d-inventory-roundtrip] PASSED %3s "
         "[%3d%%]\\n' $i '' $((i * 100 / 2500))\n"
      << "  i=$((i + 1))\ndone\n";
  for (const auto& bug : bugs) {
    out << "if grep -qF '" << bug.new_string << "' '" << bug.path << "'; then\n"
        << "  echo 'tests/test_shopkeeper.py::test_"
        << std::filesystem::path(bug.path).stem().string() << " PASSED'\nelse\n"
        << "  echo 'tests/test_shopkeeper.py::test_"
        << std::filesystem::path(bug.path).stem().string() << " FAILED'\n"
        << "  echo '    AssertionError: " << bug.path << " still has:" << bug.old_string << "'\n"
        << "  fail=1\nfi\n";
  }
  out << "if [ $fail -ne 0 ]; then echo '=== FAILED: see above ==='; else echo '=== all passed "
         "==='; fi\nexit $fail\n";
  return out.str();
}

SampleRepo write_sample_repo(const std::string& repo) {
  namespace fs = std::filesystem;
  SampleRepo sample;
  const std::string package = "src/shopkeeper/";
  fs::create_directories(repo + "/" + package);
  Lcg lcg(24);
  std::size_t function_index = 0;
  for (const auto& module : kModules) {
    std::string text = "\"\"\"shopkeeper." +
                       std::string(module.name).substr(0, std::strlen(module.name) - 3) +
                       ": part of the shop's inventory toolkit.\"\"\"\n\nimport math\n"
                       "from collections import defaultdict\n";
    std::string bug_text = module.bad != nullptr ? buggy_function(module) : std::string();
    bool planted = bug_text.empty();
    while (text.size() + bug_text.size() < module.bytes) {
      text += filler_function(lcg, function_index++);
      if (!planted && text.size() * 2 >= module.bytes) {
        text += bug_text;
        planted = true;
      }
    }
    if (!planted) text += bug_text;
    const std::string path = package + module.name;
    std::ofstream(repo + "/" + path) << text;
    sample.sources.push_back(path);
    if (module.bad != nullptr) sample.bugs.push_back({path, module.bad, module.good});
  }
  std::ofstream(repo + "/src/shopkeeper/__init__.py") << "\"\"\"shopkeeper.\"\"\"\n";
  std::ofstream(repo + "/README.md") << kReadme;
  std::ofstream(repo + "/run_tests.sh") << test_script(sample.bugs);
  std::ofstream(repo + "/.gitignore") << "__pycache__/\n*.pyc\n";
  const std::vector<std::string> git = {
      "git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-C", repo};
  for (std::vector<std::string> args :
       {std::vector<std::string>{"init", "-q", "-b", "main"},
        {"add", "-A"},
        {"commit", "-q", "-m", "shopkeeper: the toolkit and its tests"}}) {
    std::vector<std::string> all = git;
    all.insert(all.end(), args.begin(), args.end());
    if (run(all) != 0) fail("git " + args.front() + " failed in " + repo);
  }
  return sample;
}

// ---- the session ----

// The fixed 25-turn session: turn number → the model's reply.
class BenchSession {
 public:
  BenchSession(const SampleRepo& sample, const std::string& repo) : sample_(sample) {
    // The edits come from the repository on disk: each planted line must be
    // there exactly once, or the bench is not measuring what it says.
    for (const auto& bug : sample_.bugs) {
      std::ifstream in(repo + "/" + bug.path);
      std::stringstream text;
      text << in.rdbuf();
      const std::string body = text.str();
      const auto at = body.find(bug.old_string);
      if (at == std::string::npos || body.find(bug.old_string, at + 1) != std::string::npos) {
        fail("the planted line of " + bug.path + " is not there exactly once");
      }
    }
  }

  ModelReply operator()(const ModelCall& call) const {
    const auto& src = sample_.sources;  // 15 modules; bugs in 1, 3, 7, 13
    const auto read = [](const std::string& path, std::string why) {
      return ModelReply::call("read_file", {{"path", path}}, std::move(why));
    };
    switch (call.turn) {
      case 0:
        return ModelReply::call("list_directory", {{"path", "."}, {"recursive", true}},
                                "I'll start by looking at how the repository is laid out.");
      case 1:
        return ModelReply::call("glob", {{"pattern", "**/*.py"}},
                                "A Python package. Let me list every module.");
      case 2:
        return read("README.md", "The README should say how the tests run.");
      case 3:
        return read(src[3], "The report's statistics live in stats.py; reading it first.");
      case 4:
        return read(src[1], "Now the export parser.");
      case 5:
        return read(src[0], "And the configuration module, which the parser imports.");
      case 6:
        return read(src[7], "The supplier client retries; reading retry.py.");
      case 7:
        return read(src[6], "Reading the HTTP client that calls the retry helpers.");
      case 8:
        return read(src[13], "The report table's layout is in formatting.py.");
      case 9:
        return read(src[9], "And report.py, which puts the statistics and the table together.");
      case 10:
        return ModelReply::call(
            "grep",
            {{"pattern", "def (mean|split_fields|backoff_delay|pad_cell)"}, {"path", "src"}},
            "Let me find where the helpers the report relies on are defined.");
      case 11:
        return ModelReply::call("test", json::object(),
                                "Before changing anything, let me run the test suite to see "
                                "what fails.");
      case 12:
        return read(src[4], "Four checks fail. Reading storage.py to see how data comes in.");
      case 13:
        return read(src[11], "And models.py for the record shapes.");
      case 14:
        return read(src[12], "validators.py may constrain the separator too.");
      case 15:
        return ModelReply::call("grep", {{"pattern", "separator|ljust|rjust"}, {"path", "src"}},
                                "Checking every use of the separator and of the padding.");
      case 16:
      case 17:
      case 18:
      case 19: {
        const auto& bug = sample_.bugs[call.turn - 16];
        return ModelReply::call(
            "edit_file",
            {{"path", bug.path}, {"old_string", bug.old_string}, {"new_string", bug.new_string}},
            "Fixing " + bug.path + ": the line contradicts what the README and the tests expect.");
      }
      case 20:
        return ModelReply::call("test", json::object(), "Running the suite again.");
      case 21:
        return ModelReply::call("run_command", {{"command", "git diff --stat"}},
                                "Everything passes. Let me review the size of the change.");
      case 22:
        return read(sample_.bugs[0].path, "A last look at one of the fixed functions.");
      case 23:
        return ModelReply::call("grep", {{"pattern", "TODO|FIXME"}, {"path", "."}},
                                "Checking nothing was left marked as unfinished.");
      default:
        return ModelReply::call(
            "complete_task",
            {{"summary",
              "Fixed four bugs the suite reported: the export separator (parser.py), the mean "
              "(stats.py), the exponential back-off (retry.py) and the right-aligned cells "
              "(formatting.py). sh run_tests.sh passes."}},
            "All four fixes are in and the suite passes.");
    }
  }

 private:
  const SampleRepo& sample_;
};

// ---- looprd ----

struct Daemon {
  pid_t pid = -1;
  std::string socket;
  std::string log;
  std::optional<ControlClient> client;

  json call(const std::string& method, json params = json::object()) {
    auto reply = client->call(method, std::move(params), std::chrono::minutes(5));
    if (!reply) fail(method + ": " + reply.error().message);
    return *reply;
  }
};

Daemon start_daemon(const std::string& bin_dir, const std::string& base) {
  Daemon d;
  d.socket = base + "/run/looprd.sock";
  d.log = base + "/looprd.log";
  std::vector<std::string> args = {
      bin_dir + "/looprd", "--foreground", "--socket",      d.socket,      "--config-dir",
      base + "/config",    "--state-dir",  base + "/state", "--log-level", "warn"};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, d.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const int rc = ::posix_spawn(&d.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) fail("cannot start " + args[0]);
  for (int i = 0; i < 400 && !d.client; ++i) {
    if (auto c = ControlClient::open(d.socket))
      d.client.emplace(std::move(*c));
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(25));  // waiting for start-up
  }
  if (!d.client) fail("looprd did not answer; its log: " + d.log);
  return d;
}

void stop_daemon(Daemon& d) {
  d.client.reset();
  ::kill(d.pid, SIGTERM);
  ::waitpid(d.pid, nullptr, 0);
}

bool is_final(const std::string& status) {
  return status == "completed" || status == "failed" || status == "cancelled" ||
         status == "budget_exhausted" || status == "stuck";
}

void write_config(const std::string& base, const std::string& work, const std::string& url) {
  std::filesystem::create_directories(base + "/config");
  std::ofstream config(base + "/config/loopr.toml");
  config << "[sandbox]\nworktree_roots = [\"" << work << "\"]\n"
         << "[commands]\ntest = \"sh run_tests.sh\"\n"
         << "[providers.bench]\nkind = \"anthropic\"\nbase_url = \"" << url << "\"\n"
         << "model = \"" << kModel << "\"\napi_key_env = \"" << kKeyVariable << "\"\n"
         << "context_window = " << kContextWindow << "\nprompt_caching = true\n"
         << "max_retries = 2\nretry_base_delay_ms = 1\nretry_max_delay_ms = 50\n"
         << "[prices.\"" << kModel << "\"]\ninput_usd_per_mtok = " << kInputPrice
         << "\noutput_usd_per_mtok = " << kOutputPrice
         << "\ncache_read_usd_per_mtok = " << kCacheReadPrice
         << "\ncache_write_usd_per_mtok = " << kCacheWritePrice << "\n";
}

// ---- one run ----

struct RunFigures {
  double requests = 0, refused = 0;
  double input = 0, cache_read = 0, cache_write = 0, output = 0;
  double usd = 0, largest = 0, largest_percent = 0;
  double completed = 0;  // 1 or 0
  double loopr_usd = 0;  // looprd's own figure for the loop
  double gap_p50_ms = 0, overhead_p50_ms = 0;
  double wall_s = 0;
  std::string status;
};

double usd_of(double input, double output, double read, double write) {
  return (input * kInputPrice + output * kOutputPrice + read * kCacheReadPrice +
          write * kCacheWritePrice) /
         1e6;
}

// Per turn: from the server's answer to the next request, minus the tool's
// time in the journal (tool_calls_started → tool_results, ms resolution).
void turn_gaps(const std::vector<ServedRequest>& served, const json& steps, RunFigures& f) {
  std::vector<std::int64_t> tool_ms;
  std::int64_t started = -1;
  for (const auto& step : steps) {
    const std::string kind = step.value("kind", "");
    if (kind == "tool_calls_started") started = step.value("at_ms", std::int64_t{0});
    if (kind == "tool_results" && started >= 0) {
      tool_ms.push_back(step.value("at_ms", std::int64_t{0}) - started);
      started = -1;
    }
  }
  std::vector<double> gaps, overheads;
  std::size_t turn = 0;
  for (std::size_t i = 0; i + 1 < served.size(); ++i) {
    if (served[i].refused) continue;
    const double gap =
        std::chrono::duration<double, std::milli>(served[i + 1].received - served[i].answered)
            .count();
    gaps.push_back(gap);
    if (turn < tool_ms.size()) overheads.push_back(gap - static_cast<double>(tool_ms[turn]));
    ++turn;
  }
  f.gap_p50_ms = loopr::bench::quantile(gaps, 0.5);
  f.overhead_p50_ms = loopr::bench::quantile(overheads, 0.5);
}

RunFigures run_once(const std::string& bin_dir, bool keep) {
  char pattern[] = "/tmp/loopr-tcbench-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  if (made == nullptr) fail("mkdtemp failed");
  const std::string base = made, work = base + "/work", repo = work + "/shopkeeper";
  std::filesystem::create_directories(repo);
  std::filesystem::create_directories(base + "/run");
  const SampleRepo sample = write_sample_repo(repo);
  const BenchSession session(sample, repo);

  ModelApiOptions options;
  options.context_window = kContextWindow;
  ModelApiServer server([&](const ModelCall& call) { return session(call); }, options);
  write_config(base, work, server.base_url());
  ::setenv(kKeyVariable, "sk-ant-bench-not-a-key", 1);

  Daemon d = start_daemon(bin_dir, base);
  const auto start = Clock::now();
  json created = d.call("loop.create",
                        {{"type", "code"},
                         {"task",
                          "The test suite (`sh run_tests.sh`) fails. Find the bugs it reports in "
                          "src/shopkeeper and fix them; the suite must pass."},
                         {"repo", repo},
                         {"provider", "bench"},
                         {"validate", "sh run_tests.sh >/dev/null 2>&1"},
                         {"max_iterations", 2}});
  const std::string id = created["loop"].value("id", "");
  if (id.empty()) fail("loop.create: " + created.dump());
  json loop;
  const auto deadline = start + std::chrono::minutes(10);
  for (;;) {
    loop = d.call("loop.get", {{"id", id}})["loop"];
    if (is_final(loop.value("status", ""))) break;
    if (Clock::now() > deadline) {
      d.call("loop.cancel", {{"id", id}});
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling loop.get
  }
  RunFigures f;
  f.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  f.status = loop.value("status", "(none)");
  if (f.status != "completed") f.status += ": " + loop.value("status_reason", "");
  f.completed = loop.value("status", "") == "completed" ? 1 : 0;
  f.loopr_usd = loop.value("usage", json::object()).value("cost_usd", 0.0);
  const json steps = d.call("loop.transcript", {{"id", id}, {"limit", 5000}})["steps"];
  stop_daemon(d);

  const auto served = server.requests();
  for (const auto& request : served) {
    f.requests += 1;
    if (request.refused) f.refused += 1;
    f.input += static_cast<double>(request.usage.input_tokens);
    f.cache_read += static_cast<double>(request.usage.cache_read_tokens);
    f.cache_write += static_cast<double>(request.usage.cache_write_tokens);
    f.output += static_cast<double>(request.usage.output_tokens);
    f.largest = std::max(f.largest, static_cast<double>(request.input_tokens));
  }
  f.usd = usd_of(f.input, f.output, f.cache_read, f.cache_write);
  f.largest_percent = 100.0 * f.largest / static_cast<double>(kContextWindow);
  turn_gaps(served, steps, f);
  if (keep) {
    std::ofstream out(base + "/requests.txt");
    for (std::size_t i = 0; i < served.size(); ++i) {
      const auto& r = served[i];
      out << i << " status " << r.status << " tokens " << r.input_tokens << " input "
          << r.usage.input_tokens << " read " << r.usage.cache_read_tokens << " write "
          << r.usage.cache_write_tokens << " output " << r.usage.output_tokens << " bp "
          << r.breakpoints << (r.refused ? " refused: " + r.error_message : "") << "\n";
    }
    std::printf("kept %s (requests.txt, looprd.log, state/)\n", base.c_str());
  } else {
    std::filesystem::remove_all(base);
  }
  return f;
}

struct Column {
  const char* name;
  double RunFigures::*field;
  const char* format;
};

const Column kColumns[] = {
    {"requests", &RunFigures::requests, "%9.0f"},
    {"refused", &RunFigures::refused, "%8.0f"},
    {"input(full)", &RunFigures::input, "%12.0f"},
    {"cache read", &RunFigures::cache_read, "%11.0f"},
    {"cache write", &RunFigures::cache_write, "%12.0f"},
    {"output", &RunFigures::output, "%8.0f"},
    {"USD", &RunFigures::usd, "%8.4f"},
    {"largest", &RunFigures::largest, "%8.0f"},
    {"% of 200k", &RunFigures::largest_percent, "%10.1f"},
    {"completed", &RunFigures::completed, "%10.0f"},
    {"looprd USD", &RunFigures::loopr_usd, "%11.4f"},
    {"gap p50 ms", &RunFigures::gap_p50_ms, "%11.1f"},
    {"-tool p50 ms", &RunFigures::overhead_p50_ms, "%13.1f"},
    {"wall s", &RunFigures::wall_s, "%7.1f"},
};

void print_header() {
  std::printf("%-6s %-28s", "run", "build");
  for (const auto& c : kColumns)
    std::printf(" %*s", static_cast<int>(std::strlen(c.format) > 0 ? std::atoi(c.format + 1) : 8),
                c.name);
  std::printf("\n");
}

void print_row(const std::string& run, const std::string& build, const RunFigures& f) {
  std::printf("%-6s %-28s", run.c_str(), build.c_str());
  for (const auto& c : kColumns) {
    std::printf(" ");
    std::printf(c.format, f.*(c.field));
  }
  std::printf("\n");
}

std::string short_name(const std::string& dir) {
  return dir.size() <= 28 ? dir : "..." + dir.substr(dir.size() - 25);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 1;
  bool keep = false;
  std::vector<std::string> bin_dirs;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--keep") {
      keep = true;
    } else if (flag == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (flag == "--bin-dir" && i + 1 < argc) {
      bin_dirs.push_back(std::filesystem::absolute(argv[++i]).string());
    } else {
      fail("usage: token_cost_bench [--runs R] [--bin-dir DIR]... [--keep]");
    }
  }
  if (bin_dirs.empty()) {
    bin_dirs.push_back(std::filesystem::canonical("/proc/self/exe").parent_path().string());
  }
  std::printf(
      "token_cost_bench: nproc %u, load %.2f; window %lld tokens; prices $%.2f/$%.2f/"
      "$%.2f/$%.2f per M input/output/cache read/cache write\n",
      std::thread::hardware_concurrency(), load_average(), static_cast<long long>(kContextWindow),
      kInputPrice, kOutputPrice, kCacheReadPrice, kCacheWritePrice);
  print_header();
  std::map<std::string, std::vector<RunFigures>> all;
  for (int r = 1; r <= runs; ++r) {
    for (const auto& dir : bin_dirs) {
      const RunFigures f = run_once(dir, keep);
      all[dir].push_back(f);
      print_row(std::to_string(r), short_name(dir), f);
      if (f.completed == 0) std::printf("       loop ended %s\n", f.status.c_str());
    }
  }
  if (runs > 1) {
    std::printf("medians of %d runs (load %.2f):\n", runs, load_average());
    for (const auto& dir : bin_dirs) {
      RunFigures m;
      for (const auto& c : kColumns) {
        std::vector<double> values;
        for (const auto& f : all[dir])
          values.push_back(f.*(c.field));
        m.*(c.field) = loopr::bench::quantile(values, 0.5);
      }
      print_row("median", short_name(dir), m);
    }
  }
  return 0;
}
