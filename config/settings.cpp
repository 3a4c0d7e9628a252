#include "config/settings.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <istream>
#include <set>

#include "common/domain_list.hpp"
#include "common/error.hpp"
#include "common/ip_address.hpp"
#include "common/path_beneath.hpp"
#include "config/repository_reader.hpp"
#include "config/toml_reader.hpp"

namespace loopr::config {

namespace {

using detail::fail;
namespace fs = std::filesystem;

constexpr std::int64_t kMiB = 1024 * 1024;
// One protocol line may be 16 MiB (DESIGN §3); a client queue must hold one.
constexpr std::int64_t kMinClientQueueBytes = 16 * kMiB;

const std::map<std::string, std::vector<std::string>>& default_loop_tools() {
  // reference/seeds/003 "Loop Type Tool Configuration".
  static const std::map<std::string, std::vector<std::string>> tools = {
      // A planner reads and records a plan: it changes no file, and its
      // loop ends with create_plan (issue 24).
      {"plan",
       {"read_file", "list_directory", "glob", "grep", "memory_search", "memory_save",
        "memory_update", "memory_delete", "oracle", "create_plan"}},
      {"spec",
       {"read_file", "write_file", "edit_file", "list_directory", "glob", "grep", "run_command",
        "memory_search", "memory_save", "memory_update", "memory_delete", "oracle", "create_spec",
        "complete_task"}},
      {"phase",
       {"read_file", "write_file", "edit_file", "list_directory", "glob", "grep", "run_command",
        "memory_search", "memory_save", "memory_update", "memory_delete", "create_phase",
        "complete_task"}},
      {"code",
       {"read_file", "write_file", "edit_file", "list_directory", "glob", "grep", "run_command",
        "build", "test", "validate", "memory_search", "memory_save", "memory_update",
        "memory_delete", "complete_task"}},
  };
  return tools;
}

// The host of an http(s) URL, lower-cased ("" when it has none).
std::string url_host(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return {};
  url.remove_prefix(scheme + 3);
  url = url.substr(0, url.find_first_of("/?#"));
  if (auto at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
  if (!url.starts_with('[')) url = url.substr(0, url.find(':'));
  std::string host(url);
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return host;
}

ProviderSettings provider_defaults(ProviderKind kind) {
  ProviderSettings p;
  p.kind = kind;
  p.max_tokens = default_max_tokens(default_context_window(kind));
  switch (kind) {
    case ProviderKind::anthropic:
      p.base_url = "https://api.anthropic.com";
      p.model = "claude-sonnet-4-5";
      p.api_key_env = "ANTHROPIC_API_KEY";
      break;
    case ProviderKind::openai:
      p.base_url = "https://api.openai.com/v1";
      p.model = "gpt-4.1";
      p.api_key_env = "OPENAI_API_KEY";
      break;
    case ProviderKind::scripted:
      p.max_retries = 0;
      break;
  }
  return p;
}

ProviderKind parse_provider_kind(std::string_view text) {
  if (text == "openai") return ProviderKind::openai;
  if (text == "scripted") return ProviderKind::scripted;
  return ProviderKind::anthropic;
}

ApprovalPolicy parse_policy(std::string_view text) {
  if (text == "ask") return ApprovalPolicy::ask;
  if (text == "deny") return ApprovalPolicy::deny;
  return ApprovalPolicy::automatic;
}

bool is_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

bool is_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Applies one loopr.toml document to a Settings, section by section.
class SettingsReader {
 public:
  SettingsReader(Settings& settings, const EnvLookup& env) : s_(settings), env_(env) {}

  void apply(const toml::value& document) {
    for (const auto& entry : detail::entries(document)) {
      const toml::value& v = *entry.value;
      const std::string& key = entry.key;
      if (key == "daemon") {
        daemon(v);
      } else if (key == "sandbox") {
        sandbox(v);
      } else if (key == "lanes") {
        lanes(v);
      } else if (key == "approval") {
        approval(v);
      } else if (key == "commands") {
        commands(v);
      } else if (key == "web_fetch") {
        web_fetch(v);
      } else if (key == "egress") {
        egress(v);
      } else if (key == "web_search") {
        web_search(v);
      } else if (key == "loops") {
        loops(v);
      } else if (key == "providers") {
        providers(v);
      } else if (key == "llm") {
        llm(v);
      } else if (key == "prices") {
        prices(v);
      } else if (key == "budgets") {
        budgets(v);
      } else if (key == "loop_health") {
        loop_health(v);
      } else if (key == "worktrees") {
        worktrees(v);
      } else if (key == "scheduler") {
        scheduler(v);
      } else if (key == "merges") {
        merges(v);
      } else if (key == "memory") {
        memory(v);
      } else if (key == "oracle") {
        oracle(v);
      } else if (key == "context") {
        context(v);
      } else if (key == "notify") {
        notify(v);
      } else if (key == "cluster") {
        cluster(v);
      } else if (key == "validation") {
        validation(v);
      } else if (key == "hooks") {
        note(key, v);
        s_.hooks = read_hooks(v, key);
      } else if (key == "repositories") {
        note(key, v);
        s_.repositories = detail::read_repositories(v, env_);
      } else {
        fail(v, key,
             "unknown table; loopr.toml has [daemon], [sandbox], [lanes.*], [approval], "
             "[commands], [egress], [web_fetch], [web_search], [loops.*], [providers.*], [llm], "
             "[prices.*], "
             "[budgets.loop], [budgets.global], [budgets.plan], [loop_health], [worktrees], "
             "[scheduler], [merges], [memory], [oracle], [context], [notify], [cluster], "
             "[validation], [[hooks]] "
             "and [[repositories]]");
      }
    }
  }

 private:
  void note(const std::string& key, const toml::value& v) {
    s_.origins[key] = Origin{v.location().file_name(), detail::line_of(v)};
  }

  // An absolute path or one starting with "~/", returned with "~" expanded.
  std::string path(const toml::value& v, const std::string& key, bool may_be_empty) {
    const std::string text = detail::read_string(v, key);
    if (text.empty()) {
      if (may_be_empty) return text;
      fail(v, key, "must be a path, got an empty string");
    }
    if (text == "~" || text.starts_with("~/")) {
      auto expanded = expand_home(text, env_);
      if (!expanded) fail(v, key, "starts with ~ but HOME is not set; write an absolute path");
      return *expanded;
    }
    if (!fs::path(text).is_absolute()) {
      fail(v, key, "must be an absolute path or start with ~/, got \"" + text + "\"");
    }
    std::string out = fs::path(text).lexically_normal().string();
    if (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
  }

  std::vector<std::string> path_list(const toml::value& v, const std::string& key) {
    detail::read_string_list(v, key);
    std::vector<std::string> out;
    std::size_t index = 0;
    for (const auto& item : v.as_array()) {
      out.push_back(path(item, key + "[" + std::to_string(index++) + "]", false));
    }
    return out;
  }

  // One key of a loopr.toml table: its name, and how its value is read into
  // the Settings (`key` is the dotted key, for messages).
  using KeyReader = std::function<void(const toml::value& value, const std::string& key)>;
  struct TableKey {
    std::string_view name;
    KeyReader read;
  };

  // Reads the table `name`: a key it does not list is refused (`unknown`, or
  // "unknown key; known keys are: ..."), each key's origin is noted, and each
  // is read by its reader, in the order the file wrote them.
  void read_table(const toml::value& table, const std::string& name,
                  const std::vector<TableKey>& keys, const std::string& unknown = {}) {
    refuse_unlisted_keys(table, name, keys, unknown);
    read_listed_keys(table, name, keys);
  }

  // read_table's two halves, for a table that needs a look between them.
  static void refuse_unlisted_keys(const toml::value& table, const std::string& name,
                                   const std::vector<TableKey>& keys,
                                   const std::string& unknown = {}) {
    detail::require_table(table, name);
    std::vector<std::string_view> names;
    names.reserve(keys.size());
    for (const TableKey& key : keys)
      names.push_back(key.name);
    detail::refuse_unknown_keys(table, name, names, unknown);
  }
  void read_listed_keys(const toml::value& table, const std::string& name,
                        const std::vector<TableKey>& keys) {
    for (const auto& entry : detail::entries(table)) {
      const std::string key = name + "." + entry.key;
      note(key, *entry.value);
      find_key(keys, entry.key)->read(*entry.value, key);
    }
  }

  static const TableKey* find_key(const std::vector<TableKey>& keys, std::string_view name) {
    for (const TableKey& key : keys)
      if (key.name == name) return &key;
    return nullptr;
  }

  // Readers of the usual kinds of value, into `field`.
  // `Field`: an integer, or an optional one (a budget's limit, unset until read).
  template <typename Field>
  static KeyReader integer_in(Field& field, std::int64_t min, std::int64_t max, std::string unit) {
    return
        [&field, min, max, unit = std::move(unit)](const toml::value& v, const std::string& key) {
          field = detail::read_integer_in(v, key, min, max, unit);
        };
  }
  static KeyReader text(std::string& field) {
    return [&field](const toml::value& v, const std::string& key) {
      field = detail::read_string(v, key);
    };
  }
  static KeyReader flag(bool& field) {
    return [&field](const toml::value& v, const std::string& key) {
      field = detail::read_bool(v, key);
    };
  }
  static KeyReader text_list(std::vector<std::string>& field) {
    return [&field](const toml::value& v, const std::string& key) {
      field = detail::read_string_list(v, key);
    };
  }
  KeyReader path_of(std::string& field, bool may_be_empty) {
    return [this, &field, may_be_empty](const toml::value& v, const std::string& key) {
      field = path(v, key, may_be_empty);
    };
  }
  void daemon(const toml::value& table) {
    auto& d = s_.daemon;
    read_table(table, "daemon",
               {{"socket", path_of(d.socket_path, true)},
                {"state_dir", path_of(d.state_dir, true)},
                {"log_level",
                 [&d](const toml::value& v, const std::string& key) {
                   const auto level =
                       detail::read_choice(v, key, {"trace", "debug", "info", "warn", "error"});
                   d.log_level = level == "trace"   ? LogLevel::trace
                                 : level == "debug" ? LogLevel::debug
                                 : level == "info"  ? LogLevel::info
                                 : level == "warn"  ? LogLevel::warn
                                                    : LogLevel::error;
                 }},
                {"max_client_queue_bytes",
                 integer_in(d.max_client_queue_bytes, kMinClientQueueBytes, 4096 * kMiB,
                            "bytes; at least one 16 MiB protocol line")},
                {"heartbeat_interval_ms",
                 integer_in(d.heartbeat_interval_ms, 100, 600000, "milliseconds")},
                {"runner_restart_backoff_ms",
                 integer_in(d.runner_restart_backoff_ms, 10, 600000, "milliseconds")}});
  }

  void sandbox(const toml::value& table) {
    auto& sb = s_.sandbox;
    read_table(table, "sandbox",
               {{"mode",
                 [&sb](const toml::value& v, const std::string& key) {
                   sb.mode = detail::read_choice(v, key, {"on", "off"}) == "off" ? SandboxMode::off
                                                                                 : SandboxMode::on;
                 }},
                {"worktree_roots", path_list_of(sb.worktree_roots)},
                {"read_paths", path_list_of(sb.read_paths)},
                {"hidden_paths", path_list_of(sb.hidden_paths)},
                {"tmp_size_mb", integer_in(sb.tmp_size_mb, 1, 65536, "MiB")}});
  }

  KeyReader path_list_of(std::vector<std::string>& field) {
    return
        [this, &field](const toml::value& v, const std::string& key) { field = path_list(v, key); };
  }

  void lanes(const toml::value& table) {
    detail::require_table(table, "lanes");
    for (const auto& lane_entry : detail::entries(table)) {
      const std::string& lane = lane_entry.key;
      const std::string base = "lanes." + lane;
      const toml::value& lt = *lane_entry.value;
      if (!is_runner_lane(lane)) {
        fail(lt, base,
             lane == lanes::daemon ? "lane daemon has no settings: its tools run inside looprd"
                                   : "unknown lane; lanes with settings are no-net, net and heavy");
      }
      auto& ls = s_.lanes[lane];
      read_table(
          lt, base,
          {{"slots", integer_in(ls.slots, 1, 256, "concurrent jobs")},
           {"network",
            [&ls, lane](const toml::value& v, const std::string& key) {
              ls.network = detail::read_bool(v, key);
              if (lane == lanes::no_net && ls.network) {
                fail(v, key,
                     "lane no-net never has network access; give a tool that needs the network "
                     "lane \"net\" in catalog.toml instead");
              }
            }},
           {"memory_mb",
            [&ls](const toml::value& v, const std::string& key) {
              // 0: no memory limit at all.
              ls.memory_mb =
                  detail::read_integer(v, key) == 0
                      ? 0
                      : detail::read_integer_in(v, key, 16, 1024 * 1024, "MiB (0: none)");
            }},
           {"pids_max", integer_in(ls.pids_max, 8, 4194304, "processes")},
           {"cpu_weight", integer_in(ls.cpu_weight, 1, 10000, "cgroup cpu.weight")},
           {"warm_workers", integer_in(ls.warm_workers, 0, 256, "resident workers")},
           {"warm_worker_idle_s", integer_in(ls.warm_worker_idle_s, 1, 86400, "seconds")},
           {"address_space_mb", [&ls](const toml::value& v, const std::string& key) {
              ls.address_space_mb = detail::read_integer(v, key) == 0
                                        ? std::optional<std::int64_t>()
                                        : detail::read_integer_in(v, key, 64, 1024 * 1024,
                                                                  "MiB of address space (0: none)");
            }}});
    }
  }

  void policy_map(const toml::value& table, const std::string& base,
                  std::map<std::string, ApprovalPolicy>& out, bool lanes_only) {
    detail::require_table(table, base);
    for (const auto& entry : detail::entries(table)) {
      const std::string key = base + "." + entry.key;
      if (lanes_only && !is_known_lane(entry.key)) {
        fail(*entry.value, key, "unknown lane; lanes are no-net, net, heavy, daemon");
      }
      note(key, *entry.value);
      out[entry.key] =
          parse_policy(detail::read_choice(*entry.value, key, {"auto", "ask", "deny"}));
    }
  }

  void approval(const toml::value& table) {
    auto& a = s_.approval;
    read_table(
        table, "approval",
        {{"default",
          [&a](const toml::value& v, const std::string& key) {
            a.default_policy = parse_policy(detail::read_choice(v, key, {"auto", "ask", "deny"}));
          }},
         {"timeout_s", integer_in(a.timeout_s, 1, 86400, "seconds")},
         {"tools", [this, &a](const toml::value& v,
                              const std::string& key) { policy_map(v, key, a.tools, false); }},
         {"lanes", [this, &a](const toml::value& v,
                              const std::string& key) { policy_map(v, key, a.lanes, true); }},
         {"rules", [&a](const toml::value& v, const std::string& key) {
            a.rules = detail::read_command_rules(v, key, false);
          }}});
  }

  // A list of CIDR ranges or addresses; each must parse.
  static std::vector<std::string> network_list(const toml::value& v, const std::string& key) {
    std::vector<std::string> ranges = detail::read_string_list(v, key);
    for (const std::string& text : ranges) {
      if (auto range = NetworkRange::parse(text); !range) {
        fail(v, key, range.error().message + "; " + range.error().hint);
      }
    }
    return ranges;
  }
  static KeyReader networks(std::vector<std::string>& field) {
    return [&field](const toml::value& v, const std::string& key) { field = network_list(v, key); };
  }

  void web_fetch(const toml::value& table) {
    read_table(table, "web_fetch", {{"allowed_networks", networks(s_.web_fetch.allowed_networks)}});
  }

  void web_search(const toml::value& table) {
    WebSearchSettings& w = s_.web_search;
    std::vector<TableKey> keys = {
        {"provider",
         [&w](const toml::value& v, const std::string& key) {
           w.provider = detail::read_choice(v, key, {"brave", "google", "serper", "searxng", ""});
         }},
        {"allowed_networks", networks(w.allowed_networks)},
        {"max_retries", integer_in(w.max_retries, 0, 10, "retries")},
        {"retry_base_delay_ms", integer_in(w.retry_base_delay_ms, 1, 60'000, "milliseconds")},
        {"retry_max_delay_ms", integer_in(w.retry_max_delay_ms, 1, 60'000, "milliseconds")}};
    for (auto& [kind, provider] : w.providers) {
      keys.push_back({kind, [this, &provider, google = kind == "google"](const toml::value& v,
                                                                         const std::string& key) {
                        search_provider(v, key, provider, google);
                      }});
    }
    read_table(table, "web_search", keys,
               "unknown key; [web_search] has provider, allowed_networks, max_retries, "
               "retry_base_delay_ms, retry_max_delay_ms and the tables [web_search.brave], "
               "[web_search.google], [web_search.serper], [web_search.searxng]");
  }

  // [web_search.KIND]; only google has cx, and searxng needs no key.
  void search_provider(const toml::value& table, const std::string& base, SearchProviderSettings& p,
                       bool google) {
    detail::require_table(table, base);
    refuse_keys_in_file(table, base);
    std::vector<TableKey> keys = {{"base_url", url(p.base_url)},
                                  {"api_key_env", env_variable(p.api_key_env)},
                                  {"key_file", path_of(p.key_file, true)}};
    if (google) keys.push_back({"cx", text(p.cx)});
    read_table(table, base, keys);
  }

  // A key written into the file itself is refused, saying where keys go.
  static void refuse_keys_in_file(const toml::value& table, const std::string& base) {
    for (const auto& entry : detail::entries(table)) {
      if (entry.key == "api_key" || entry.key == "key" || entry.key == "token") {
        fail(*entry.value, base + "." + entry.key,
             "API keys do not belong in loopr.toml; set api_key_env (the name of an "
             "environment variable holding the key) or key_file");
      }
    }
  }

  static std::string http_url(const toml::value& v, const std::string& key) {
    std::string url = detail::read_string(v, key);
    if (!url.starts_with("https://") && !url.starts_with("http://")) {
      fail(v, key, "must be an http:// or https:// URL, got \"" + url + "\"");
    }
    return url;
  }
  static KeyReader url(std::string& field) {
    return [&field](const toml::value& v, const std::string& key) { field = http_url(v, key); };
  }

  static std::string env_name(const toml::value& v, const std::string& key) {
    std::string name = detail::read_string(v, key);
    if (!name.empty() && !is_env_name(name)) {
      fail(v, key,
           "must be the NAME of an environment variable (letters, digits, _), not the key "
           "itself");
    }
    return name;
  }
  static KeyReader env_variable(std::string& field) {
    return [&field](const toml::value& v, const std::string& key) { field = env_name(v, key); };
  }

  void egress(const toml::value& table) {
    auto& e = s_.egress;
    read_table(table, "egress",
               {{"allowed_networks", networks(e.allowed_networks)},
                {"port", integer_in(e.port, 1, 65535, "TCP port inside each lane")},
                {"lanes", [this, &e](const toml::value& v, const std::string& key) {
                   egress_lanes(v, key, e);
                 }}});
  }

  // [egress.lanes.LANE]: the lanes with network, each with its domain lists.
  void egress_lanes(const toml::value& table, const std::string& base, EgressSettings& e) {
    detail::require_table(table, base);
    for (const auto& lane_entry : detail::entries(table)) {
      const std::string lane_key = base + "." + lane_entry.key;
      if (lane_entry.key != lanes::net && lane_entry.key != lanes::heavy) {
        fail(*lane_entry.value, lane_key,
             "only the lanes with network have egress rules: net and heavy");
      }
      auto& rules = e.lanes[lane_entry.key];
      read_table(*lane_entry.value, lane_key,
                 {{"allow_domains", domains(rules.allow_domains)},
                  {"deny_domains", domains(rules.deny_domains)}});
    }
  }
  static KeyReader domains(std::vector<std::string>& field) {
    return [&field](const toml::value& v, const std::string& key) {
      std::vector<std::string> names = detail::read_string_list(v, key);
      if (auto parsed = DomainList::parse(names, key); !parsed) {
        fail(v, key, parsed.error().message + "; " + parsed.error().hint);
      }
      field = std::move(names);
    };
  }

  void commands(const toml::value& table) {
    auto& c = s_.commands;
    read_table(table, "commands",
               {{"build", text(c.build)},
                {"test", text(c.test)},
                {"validate", text(c.validate)},
                {"lint", text(c.lint)},
                {"lint_files", text_list(c.lint_files)}});
  }

  void context(const toml::value& table) {
    auto& c = s_.context;
    read_table(
        table, "context",
        {{"handoff_percent", integer_in(c.handoff_percent, 10, 95, "percent of the window")},
         {"tool_result_max_bytes", integer_in(c.tool_result_max_bytes, 1024, 16 * kMiB, "bytes")},
         {"tool_result_max_bytes_by_tool",
          [this, &c](const toml::value& v, const std::string& key) {
            detail::require_table(v, key);
            for (const auto& tool : detail::entries(v)) {
              const std::string tool_key = key + "." + tool.key;
              note(tool_key, *tool.value);
              c.tool_result_max_bytes_by_tool[tool.key] =
                  detail::read_integer_in(*tool.value, tool_key, 1024, 16 * kMiB, "bytes");
            }
          }},
         {"instructions_files",
          [&c](const toml::value& v, const std::string& key) {
            c.instructions_files = detail::read_string_list(v, key);
            for (const std::string& file : c.instructions_files) {
              if (file.empty() || file.front() == '/' || file.find("..") != std::string::npos) {
                fail(v, key,
                     "names files relative to the repository's top, without '..' (got '" + file +
                         "')");
              }
            }
          }},
         {"instructions_max_bytes", integer_in(c.instructions_max_bytes, 0, 1 * kMiB, "bytes")},
         {"tree_max_bytes", integer_in(c.tree_max_bytes, 0, 1 * kMiB, "bytes")}});
  }

  void loops(const toml::value& table) {
    detail::require_table(table, "loops");
    for (const auto& loop_entry : detail::entries(table)) {
      const std::string base = "loops." + loop_entry.key;
      const toml::value& lt = *loop_entry.value;
      if (std::find(std::begin(kLoopTypes), std::end(kLoopTypes), loop_entry.key) ==
          std::end(kLoopTypes)) {
        fail(lt, base, "unknown loop type; loop types are plan, spec, phase, code");
      }
      auto& loop = s_.loops[loop_entry.key];
      read_table(lt, base,
                 {{"tools",
                   [&loop](const toml::value& v, const std::string& key) {
                     loop.tools = detail::read_string_list(v, key);
                     std::set<std::string> seen;
                     for (std::size_t i = 0; i < loop.tools.size(); ++i) {
                       if (!seen.insert(loop.tools[i]).second) {
                         fail(v.as_array()[i], key + "[" + std::to_string(i) + "]",
                              "names tool '" + loop.tools[i] + "' twice");
                       }
                     }
                   }},
                  {"prompt_template",
                   [this, &loop](const toml::value& v, const std::string& key) {
                     const std::string name = detail::read_string(v, key);
                     if (name.empty())
                       fail(v, key, "must name a built-in template or a template file");
                     loop.prompt_template = name.find('/') == std::string::npos && name != "~"
                                                ? name
                                                : path(v, key, false);
                   }},
                  {"validation_command", text(loop.validation_command)},
                  {"max_iterations", integer_in(loop.max_iterations, 1, 10000, "iterations")}});
    }
  }

  void providers(const toml::value& table) {
    detail::require_table(table, "providers");
    for (const auto& provider_entry : detail::entries(table)) {
      const std::string& name = provider_entry.key;
      const std::string base = "providers." + name;
      const toml::value& pt = *provider_entry.value;
      if (!is_name(name)) fail(pt, base, "a provider name may use only letters, digits, _ and -");
      detail::require_table(pt, base);
      refuse_keys_in_file(pt, base);
      ProviderSettings p;
      const std::vector<TableKey> keys = {
          {"kind",
           [&p](const toml::value& v, const std::string& key) {
             p.kind = parse_provider_kind(
                 detail::read_choice(v, key, {"anthropic", "openai", "scripted"}));
           }},
          {"base_url", url(p.base_url)},
          {"model", text(p.model)},
          {"api_key_env", env_variable(p.api_key_env)},
          {"key_file", path_of(p.key_file, true)},
          {"max_retries", integer_in(p.max_retries, 0, 20, "retries")},
          {"script", path_of(p.script, true)},
          {"stream", flag(p.stream)},
          {"context_window", integer_in(p.context_window, 0, 100'000'000, "tokens")},
          {"max_tokens", integer_in(p.max_tokens, 1, 10'000'000, "tokens")},
          {"prompt_caching", flag(p.prompt_caching)},
          {"connect_timeout_ms", integer_in(p.connect_timeout_ms, 100, 600'000, "milliseconds")},
          {"first_byte_timeout_ms",
           integer_in(p.first_byte_timeout_ms, 100, 3'600'000, "milliseconds")},
          {"idle_timeout_ms", integer_in(p.idle_timeout_ms, 100, 3'600'000, "milliseconds")},
          {"retry_base_delay_ms", integer_in(p.retry_base_delay_ms, 1, 600'000, "milliseconds")},
          {"retry_max_delay_ms", integer_in(p.retry_max_delay_ms, 1, 3'600'000, "milliseconds")},
          {"max_in_flight", integer_in(p.max_in_flight, 0, 10'000, "model calls; 0: no limit")},
          {"max_tokens_field",
           [&p](const toml::value& v, const std::string& key) {
             p.max_tokens_field =
                 detail::read_choice(v, key, {"max_tokens", "max_completion_tokens"});
           }},
          {"reasoning_effort", [&p](const toml::value& v, const std::string& key) {
             p.reasoning_effort = detail::read_string(v, key);
             if (!p.reasoning_effort.empty()) {
               p.reasoning_effort =
                   detail::read_choice(v, key, {"minimal", "low", "medium", "high"});
             }
           }}};
      refuse_unlisted_keys(pt, base, keys);
      note(base, pt);
      if (auto existing = s_.providers.find(name); existing != s_.providers.end()) {
        p = existing->second;
      } else {
        if (!pt.contains("kind")) {
          fail(pt, base, "a new provider must set kind: \"anthropic\", \"openai\" or \"scripted\"");
        }
        p = provider_defaults(parse_provider_kind(detail::read_choice(
            pt.at("kind"), base + ".kind", {"anthropic", "openai", "scripted"})));
      }
      read_listed_keys(pt, base, keys);
      s_.providers[name] = std::move(p);
    }
  }

  void llm(const toml::value& table) {
    read_table(table, "llm",
               {{"provider", text(s_.llm.provider)}, {"fallback", text_list(s_.llm.fallback)}});
  }

  // A non-negative number of USD (a TOML integer or float).
  static double usd(const toml::value& v, const std::string& key) {
    double value = 0;
    if (v.is_integer()) {
      value = static_cast<double>(v.as_integer());
    } else if (v.is_floating()) {
      value = v.as_floating();
    } else {
      fail(v, key, "must be a number of US dollars, got " + detail::describe(v));
    }
    if (!(value >= 0) || value > 1e9) fail(v, key, "must be between 0 and 1e9 US dollars");
    return value;
  }
  // `Field`: a double, or an optional one (a budget's limit).
  template <typename Field>
  static KeyReader dollars(Field& field) {
    return [&field](const toml::value& v, const std::string& key) { field = usd(v, key); };
  }

  void prices(const toml::value& table) {
    detail::require_table(table, "prices");
    for (const auto& model_entry : detail::entries(table)) {
      ModelPrice& price = s_.prices[model_entry.key];
      read_table(*model_entry.value, "prices.\"" + model_entry.key + "\"",
                 {{"input_usd_per_mtok", dollars(price.input)},
                  {"output_usd_per_mtok", dollars(price.output)},
                  {"cache_read_usd_per_mtok", dollars(price.cache_read)},
                  {"cache_write_usd_per_mtok", dollars(price.cache_write)}});
    }
  }

  void budget_limits(const toml::value& table, const std::string& base, BudgetLimits& limits) {
    constexpr std::int64_t kMax = 1'000'000'000'000;
    read_table(
        table, base,
        {{"turns_per_iteration", integer_in(limits.turns_per_iteration, 1, 100000, "model turns")},
         {"tool_calls", integer_in(limits.tool_calls, 1, kMax, "tool calls")},
         {"wall_clock_s", integer_in(limits.wall_clock_s, 1, kMax, "seconds")},
         {"input_tokens", integer_in(limits.input_tokens, 1, kMax, "tokens")},
         {"output_tokens", integer_in(limits.output_tokens, 1, kMax, "tokens")},
         {"cache_read_tokens", integer_in(limits.cache_read_tokens, 1, kMax, "tokens")},
         {"cache_write_tokens", integer_in(limits.cache_write_tokens, 1, kMax, "tokens")},
         {"usd", dollars(limits.usd)}});
  }
  void budgets(const toml::value& table) {
    auto& b = s_.budgets;
    const auto limits_of = [this](BudgetLimits& limits) -> KeyReader {
      return [this, &limits](const toml::value& v, const std::string& key) {
        budget_limits(v, key, limits);
      };
    };
    read_table(table, "budgets",
               {{"loop", limits_of(b.loop)},
                {"global", limits_of(b.global)},
                {"plan", limits_of(b.plan)}});
  }

  void loop_health(const toml::value& table) {
    auto& h = s_.loop_health;
    read_table(
        table, "loop_health",
        {{"repeated_call_limit", integer_in(h.repeated_call_limit, 1, 1000, "times")},
         {"unchanged_iteration_limit", integer_in(h.unchanged_iteration_limit, 1, 1000, "times")},
         {"malformed_call_limit", integer_in(h.malformed_call_limit, 1, 1000, "times")}});
  }

  void worktrees(const toml::value& table) {
    auto& w = s_.worktrees;
    read_table(table, "worktrees",
               {{"folder", path_of(w.folder, true)},
                {"keep_finished_s",
                 integer_in(w.keep_finished_s, -1, 10 * 365 * 86400, "seconds; -1: never")},
                {"include",
                 [&w](const toml::value& v, const std::string& key) {
                   // Files of the checkout: relative, within it (loops/git/worktree_prep.hpp).
                   w.prep.include = detail::read_string_list(v, key);
                   for (std::size_t i = 0; i < w.prep.include.size(); ++i) {
                     detail::check_include_pattern(
                         v.as_array()[i], key + "[" + std::to_string(i) + "]", w.prep.include[i]);
                   }
                 }},
                {"setup", text(w.prep.setup)},
                {"copy_limit_mb", integer_in(w.copy_limit_mb, 1, 1024 * 1024, "MiB")}});
  }

  void scheduler(const toml::value& table) {
    auto& sc = s_.scheduler;
    const std::string unit = "loops; 0: no limit";
    read_table(table, "scheduler",
               {{"max_running", integer_in(sc.max_running, 0, 10'000, unit)},
                {"max_running_plan", integer_in(sc.max_running_plan, 0, 10'000, unit)},
                {"max_running_spec", integer_in(sc.max_running_spec, 0, 10'000, unit)},
                {"max_running_phase", integer_in(sc.max_running_phase, 0, 10'000, unit)},
                {"max_running_code", integer_in(sc.max_running_code, 0, 10'000, unit)}});
  }

  void validation(const toml::value& table) {
    read_table(table, "validation",
               {{"protected_paths", [this](const toml::value& v, const std::string& key) {
                   s_.validation.protected_paths = detail::read_protected_paths(v, key);
                 }}});
  }

  static std::vector<HookSettings> read_hooks(const toml::value& v, const std::string& key) {
    if (!v.is_array()) {
      fail(v, key,
           "must be an array of tables, written [[hooks]] with event = \"tool.before\" and "
           "command = \"...\", got " +
               detail::describe(v));
    }
    std::vector<HookSettings> hooks;
    const auto& items = v.as_array();
    for (std::size_t i = 0; i < items.size(); ++i) {
      const toml::value& table = items[i];
      const std::string prefix = key + "[" + std::to_string(i) + "]";
      detail::require_table(table, prefix);
      HookSettings hook;
      hook.origin = {table.location().file_name(), detail::line_of(table)};
      bool has_event = false;
      for (const auto& field : detail::entries(table)) {
        const std::string field_key = prefix + "." + field.key;
        const toml::value& value = *field.value;
        if (field.key == "event") {
          hook.event =
              detail::read_choice(value, field_key,
                                  {"tool.before", "tool.after", "approval.needed", "iteration.end",
                                   "loop.end", "plan.awaiting_approval", "worktree.created"});
          has_event = true;
        } else if (field.key == "tools") {
          hook.tools = detail::read_string_list(value, field_key);
          for (const std::string& tool : hook.tools) {
            if (tool.empty()) fail(value, field_key, "must not hold an empty tool name");
          }
        } else if (field.key == "command") {
          hook.command = detail::read_string(value, field_key);
          if (hook.command.empty()) fail(value, field_key, "must not be empty");
        } else if (field.key == "timeout_s") {
          hook.timeout_s = detail::read_integer_in(value, field_key, 1, 3600, "seconds");
        } else if (field.key == "trusted") {
          hook.trusted = detail::read_bool(value, field_key);
        } else {
          fail(value, field_key,
               "unknown key; a hook has event, tools, command, timeout_s and trusted");
        }
      }
      if (!has_event) {
        fail(table, prefix,
             "needs event: tool.before, tool.after, approval.needed, iteration.end, loop.end, "
             "plan.awaiting_approval or worktree.created");
      }
      if (hook.command.empty()) fail(table, prefix, "needs command, a shell command line");
      if (!hook.tools.empty() && hook.event != "tool.before" && hook.event != "tool.after" &&
          hook.event != "approval.needed") {
        fail(table, prefix + ".tools",
             "filters tool events only (tool.before, tool.after, approval.needed); " + hook.event +
                 " is not about one tool");
      }
      hooks.push_back(std::move(hook));
    }
    return hooks;
  }

  void merges(const toml::value& table) {
    read_table(table, "merges",
               {{"resolve_max_iterations",
                 integer_in(s_.merges.resolve_max_iterations, 1, 100, "iterations")}});
  }

  void memory(const toml::value& table) {
    auto& m = s_.memory;
    read_table(table, "memory",
               {{"max_note_bytes", integer_in(m.max_note_bytes, 64, 1024 * 1024, "bytes")},
                {"max_notes", integer_in(m.max_notes, 1, 1'000'000, "notes")}});
  }

  void oracle(const toml::value& table) {
    auto& o = s_.oracle;
    read_table(
        table, "oracle",
        {{"provider", text(o.provider)},
         {"model", text(o.model)},
         {"max_tokens", integer_in(o.max_tokens, 1, 1'000'000, "tokens")},
         {"max_files", integer_in(o.max_files, 0, 100, "files")},
         {"max_file_bytes", integer_in(o.max_file_bytes, 1024, 16 * 1024 * 1024, "bytes")},
         {"max_total_bytes", integer_in(o.max_total_bytes, 1024, 64 * 1024 * 1024, "bytes")}});
  }

  void notify(const toml::value& table) {
    auto& n = s_.notify;
    read_table(table, "notify",
               {{"webhook_url", url(n.webhook_url)},
                {"webhook_body", text(n.webhook_body)},
                {"desktop", flag(n.desktop)},
                {"max_per_minute", integer_in(n.max_per_minute, 1, 600, "notifications")}});
  }

  void cluster(const toml::value& table) {
    auto& c = s_.cluster;
    const auto labels = [](std::vector<std::string>& field) -> KeyReader {
      return [&field](const toml::value& v, const std::string& key) {
        field = detail::read_string_list(v, key);
        for (const std::string& label : field) {
          if (!cluster_label_valid(label)) {
            fail(v, key,
                 "\"" + label +
                     "\" is not a label: 1-64 letters, digits, '_', '-' or '=' (\"gpu\", "
                     "\"arch=arm64\")");
          }
        }
      };
    };
    read_table(table, "cluster",
               {{"nats_url",
                 [&c](const toml::value& v, const std::string& key) {
                   c.nats_url = detail::read_string(v, key);
                   if (!c.nats_url.empty() && !c.nats_url.starts_with("nats://") &&
                       !c.nats_url.starts_with("tls://")) {
                     fail(v, key, "must start with nats:// or tls:// (\"nats://HOST:4222\")");
                   }
                 }},
                {"creds_file", path_of(c.creds_file, true)},
                {"tls_ca_file", path_of(c.tls_ca_file, true)},
                {"tls_cert_file", path_of(c.tls_cert_file, true)},
                {"tls_key_file", path_of(c.tls_key_file, true)},
                {"lanes",
                 [&c](const toml::value& v, const std::string& key) {
                   c.lanes = detail::read_string_list(v, key);
                   for (const std::string& lane : c.lanes) {
                     if (lane == lanes::net) {
                       fail(v, key,
                            "the net lane stays on this machine: its calls need the egress "
                            "proxy, and web_search's carry a provider's key; workers take "
                            "no-net and heavy");
                     }
                     if (lane != lanes::no_net && lane != lanes::heavy) {
                       fail(v, key, "unknown lane \"" + lane + "\"; workers take no-net and heavy");
                     }
                   }
                 }},
                {"require_labels", labels(c.require_labels)},
                {"queue_timeout_s", integer_in(c.queue_timeout_s, 1, 86400, "seconds")},
                {"on_queue_timeout",
                 [&c](const toml::value& v, const std::string& key) {
                   c.on_queue_timeout = detail::read_choice(v, key, {"local", "fail"});
                 }},
                {"ack_wait_s", integer_in(c.ack_wait_s, 1, 3600, "seconds")},
                {"admit", text_list(c.admit)},
                {"stream", [&c](const toml::value& v, const std::string& key) {
                   c.stream = detail::read_string(v, key);
                   if (!cluster_label_valid(c.stream) || c.stream.find('=') != std::string::npos) {
                     fail(v, key, "a stream name is 1-64 letters, digits, '_' or '-'");
                   }
                 }}});
  }

  Settings& s_;
  const EnvLookup& env_;
};

// "FILE:LINE: KEY: " for a key set by a file, "built-in defaults: KEY: " else.
[[noreturn]] void fail_at_origin(const Settings& s, const std::string& key,
                                 const std::string& message) {
  auto it = s.origins.find(key);
  if (it == s.origins.end()) throw ConfigError("built-in defaults: " + key + ": " + message);
  throw ConfigError(it->second.file + ":" + std::to_string(it->second.line) + ": " + key + ": " +
                    message);
}

// Checks that span sections, once a whole document has been applied.
void check_consistency(const Settings& s) {
  if (s.cluster.configured()) {
    if (s.cluster.creds_file.empty() && !cluster_url_is_loopback(s.cluster.nats_url)) {
      fail_at_origin(s, "cluster.nats_url",
                     "a NATS server that is not on this machine needs credentials: set "
                     "[cluster] creds_file to the .creds or nkey seed file loopr's NATS user was "
                     "given (docs/cluster.md)");
    }
    if (s.cluster.tls_cert_file.empty() != s.cluster.tls_key_file.empty()) {
      fail_at_origin(
          s, s.cluster.tls_cert_file.empty() ? "cluster.tls_key_file" : "cluster.tls_cert_file",
          "a client certificate needs both tls_cert_file and tls_key_file");
    }
  }
  if (s.oracle.configured() && s.providers.count(s.oracle.provider) == 0) {
    std::vector<std::string> names;
    for (const auto& [name, p] : s.providers)
      names.push_back(name);
    fail_at_origin(s, "oracle.provider",
                   "no provider named \"" + s.oracle.provider + "\"; providers are " +
                       detail::join(names) + " (or leave [oracle] provider unset for no oracle)");
  }
  if (s.providers.count(s.llm.provider) == 0) {
    std::vector<std::string> names;
    for (const auto& [name, p] : s.providers)
      names.push_back(name);
    fail_at_origin(
        s, "llm.provider",
        "no provider named \"" + s.llm.provider + "\"; providers are " + detail::join(names));
  }
  for (const std::string& fallback : s.llm.fallback) {
    if (s.providers.count(fallback) != 0) continue;
    std::vector<std::string> names;
    for (const auto& [name, p] : s.providers)
      names.push_back(name);
    fail_at_origin(s, "llm.fallback",
                   "no provider named \"" + fallback + "\"; providers are " + detail::join(names));
  }
  for (const auto& [name, p] : s.providers) {
    const std::string base = "providers." + name;
    if (p.kind != ProviderKind::openai) {
      const std::string kind(to_string(p.kind));
      if (!p.max_tokens_field.empty()) {
        fail_at_origin(s, base + ".max_tokens_field",
                       "applies to kind \"openai\" only, this provider's kind is \"" + kind +
                           "\" (the Anthropic Messages API always takes max_tokens): remove it");
      }
      if (!p.reasoning_effort.empty()) {
        fail_at_origin(s, base + ".reasoning_effort",
                       "applies to kind \"openai\" only (Chat Completions' reasoning_effort), "
                       "this provider's kind is \"" +
                           kind + "\": remove it");
      }
    }
    if (s.origins.contains(base + ".max_tokens") && p.max_tokens >= p.window()) {
      fail_at_origin(
          s, base + ".max_tokens",
          std::to_string(p.max_tokens) + " is not below the context window (" +
              std::to_string(p.window()) +
              (p.context_window > 0
                   ? " tokens, context_window)"
                   : " tokens, the default for kind \"" + std::string(to_string(p.kind)) + "\")") +
              ": a call's input and its answer share the window; lower max_tokens, or leave "
              "it unset for min(16384, window / 8)");
    }
    if (p.kind == ProviderKind::scripted) {
      if (p.script.empty()) {
        fail_at_origin(s, base, "a scripted provider must set script (a recorded session file)");
      }
      continue;
    }
    if (p.base_url.empty()) fail_at_origin(s, base, "must set base_url");
    if (p.model.empty()) fail_at_origin(s, base, "must set model");
    if (p.api_key_env.empty() && p.key_file.empty() && p.base_url.starts_with("https://")) {
      fail_at_origin(s, base,
                     "must set api_key_env or key_file (a local http:// server may do without)");
    }
  }
}

void check_worktree_folder(const Settings& s) {
  if (s.worktrees.folder.empty()) return;
  for (const std::string& root : s.sandbox.worktree_roots) {
    if (same_or_beneath(s.worktrees.folder, root)) return;
  }
  fail_at_origin(s, "worktrees.folder",
                 "\"" + s.worktrees.folder +
                     "\" is not beneath any [sandbox] worktree_roots entry; loops' tools run "
                     "only there: pick a folder inside one, or add a root");
}

// A provider's max_tokens that no file set fits its window, as it is now.
void fit_unset_max_tokens(Settings& s) {
  for (auto& [name, p] : s.providers) {
    if (!s.origins.contains("providers." + name + ".max_tokens")) {
      p.max_tokens = default_max_tokens(p.window());
    }
  }
}

Settings merged(const Settings& base, const toml::value& document, const EnvLookup& env) {
  Settings next = base;
  SettingsReader(next, env).apply(document);
  fit_unset_max_tokens(next);
  check_consistency(next);
  check_worktree_folder(next);
  return next;
}

}  // namespace

bool cluster_label_valid(std::string_view label) {
  if (label.empty() || label.size() > 64) return false;
  for (const char c : label) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '=';
    if (!ok) return false;
  }
  return true;
}

bool cluster_url_is_loopback(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return false;
  std::string_view rest = url.substr(scheme + 3);
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  std::string_view host;
  if (rest.starts_with("[")) {
    const auto close = rest.find(']');
    if (close == std::string_view::npos) return false;
    host = rest.substr(1, close - 1);
  } else {
    host = rest.substr(0, rest.find_first_of(":/,"));
  }
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8 written as a dotted quad ("127.example" is a name, not loopback).
  int parts = 1;
  for (const char c : host) {
    if (c == '.') {
      ++parts;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return parts == 4 && host.starts_with("127.");
}

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::trace:
      return "trace";
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warn:
      return "warn";
    case LogLevel::error:
      return "error";
  }
  return "info";
}

std::string_view to_string(SandboxMode mode) {
  return mode == SandboxMode::off ? "off" : "on";
}

std::string_view to_string(ApprovalPolicy policy) {
  switch (policy) {
    case ApprovalPolicy::automatic:
      return "auto";
    case ApprovalPolicy::ask:
      return "ask";
    case ApprovalPolicy::deny:
      return "deny";
  }
  return "ask";
}

std::string_view to_string(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::anthropic:
      return "anthropic";
    case ProviderKind::openai:
      return "openai";
    case ProviderKind::scripted:
      return "scripted";
  }
  return "anthropic";
}

Settings Settings::defaults() {
  Settings s;
  // Two cores is the reference machine: a few cheap no-net jobs in parallel,
  // one heavy build at a time.
  s.lanes[std::string(lanes::no_net)] = LaneSettings{4, false, 1024, 256, std::nullopt};
  s.lanes[std::string(lanes::net)] = LaneSettings{2, true, 1024, 256, std::nullopt};
  s.lanes[std::string(lanes::heavy)] = LaneSettings{1, true, 4096, 1024, std::nullopt};
  for (const auto& [type, tools] : default_loop_tools()) {
    LoopSettings loop;
    loop.tools = tools;
    loop.prompt_template = type;
    loop.max_iterations = type == "code" ? 50 : 10;
    s.loops[type] = std::move(loop);
  }
  s.providers["anthropic"] = provider_defaults(ProviderKind::anthropic);
  s.providers["openai"] = provider_defaults(ProviderKind::openai);
  s.llm.provider = "anthropic";
  s.web_search.providers["brave"] = {"https://api.search.brave.com", "BRAVE_SEARCH_API_KEY", "",
                                     ""};
  s.web_search.providers["google"] = {"https://www.googleapis.com", "GOOGLE_CSE_API_KEY", "", ""};
  s.web_search.providers["serper"] = {"https://google.serper.dev", "SERPER_API_KEY", "", ""};
  s.web_search.providers["searxng"] = {};
  // List prices at the time of writing; [prices."MODEL"] in loopr.toml
  // replaces them. A loop with a USD budget refuses to start on a model
  // without a price.
  s.prices["claude-sonnet-4-5"] = ModelPrice{3.0, 15.0, 0.30, 3.75};
  s.prices["gpt-4.1"] = ModelPrice{2.0, 8.0, 0.50, 0.0};
  s.budgets.loop.turns_per_iteration = 50;
  return s;
}

Settings Settings::load(const std::string& path, const EnvLookup& env) {
  std::error_code ec;
  const bool present = fs::exists(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw ConfigError(path + ": cannot check the file: " + ec.message());
  }
  if (!present) return defaults();
  return merged(defaults(), detail::parse_document_file(path), env);
}

void Settings::merge_toml(std::istream& in, const std::string& name, const EnvLookup& env) {
  *this = merged(*this, detail::parse_document(in, name), env);
}

void Settings::validate_against(const Catalog& catalog) const {
  auto known = [&] {
    std::vector<std::string> names;
    for (const auto& tool : catalog.tools())
      names.push_back(tool.name);
    return detail::join(names);
  };
  for (const auto& [type, loop] : loops) {
    for (const auto& name : loop.tools) {
      if (catalog.find(name) == nullptr) {
        fail_at_origin(*this, "loops." + type + ".tools",
                       "unknown tool '" + name + "'; the catalog has: " + known());
      }
    }
  }
  for (const auto& [name, policy] : approval.tools) {
    if (catalog.find(name) == nullptr) {
      fail_at_origin(*this, "approval.tools." + name,
                     "unknown tool '" + name + "'; the catalog has: " + known());
    }
  }
}

ApprovalPolicy Settings::approval_for(const ToolSpec& tool) const {
  if (auto it = approval.tools.find(tool.name); it != approval.tools.end()) return it->second;
  if (auto it = approval.lanes.find(tool.lane); it != approval.lanes.end()) return it->second;
  if (approval.default_policy == ApprovalPolicy::automatic && sandbox.mode == SandboxMode::off &&
      tool.tier == SafetyTier::privileged && is_runner_lane(tool.lane)) {
    return ApprovalPolicy::ask;
  }
  return approval.default_policy;
}

std::int64_t SchedulerSettings::limit_for(const std::string& type) const {
  if (type == "plan") return max_running_plan;
  if (type == "spec") return max_running_spec;
  if (type == "phase") return max_running_phase;
  if (type == "code") return max_running_code;
  return 0;
}

std::int64_t default_context_window(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::anthropic:
      return kAnthropicContextWindow;
    case ProviderKind::openai:
      return kOpenAiContextWindow;
    case ProviderKind::scripted:
      break;
  }
  return kScriptedContextWindow;
}

std::int64_t default_max_tokens(std::int64_t context_window) {
  std::int64_t tokens =
      std::max<std::int64_t>(1024, std::min<std::int64_t>(16384, context_window / 8));
  return std::max<std::int64_t>(1, std::min(tokens, context_window / 2));
}

std::int64_t ProviderSettings::window() const {
  return context_window > 0 ? context_window : default_context_window(kind);
}

std::string ProviderSettings::max_tokens_field_to_send() const {
  if (!max_tokens_field.empty()) return max_tokens_field;
  return url_host(base_url) == "api.openai.com" ? "max_completion_tokens" : "max_tokens";
}

const ProviderSettings& Settings::active_provider() const {
  return providers.at(llm.provider);
}

std::string Settings::worktree_folder() const {
  if (!worktrees.folder.empty()) return worktrees.folder;
  if (sandbox.worktree_roots.empty()) return {};
  const std::string& root = sandbox.worktree_roots.front();
  return root == "/" ? "/.loopr-worktrees" : root + "/.loopr-worktrees";
}

}  // namespace loopr::config
