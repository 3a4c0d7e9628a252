#include "config/settings.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
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
      } else if (key == "repositories") {
        note(key, v);
        s_.repositories = detail::read_repositories(v, env_);
      } else {
        fail(v, key,
             "unknown table; loopr.toml has [daemon], [sandbox], [lanes.*], [approval], "
             "[commands], [egress], [web_fetch], [web_search], [loops.*], [providers.*], [llm], "
             "[prices.*], "
             "[budgets.loop], [budgets.global], [budgets.plan], [loop_health], [worktrees], "
             "[scheduler], [merges], [memory], [oracle], [context] and [[repositories]]");
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

  void daemon(const toml::value& table) {
    detail::require_table(table, "daemon");
    detail::refuse_unknown_keys(table, "daemon",
                                {"socket", "state_dir", "log_level", "max_client_queue_bytes",
                                 "heartbeat_interval_ms", "runner_restart_backoff_ms"});
    auto& d = s_.daemon;
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "daemon." + entry.key;
      note(key, v);
      if (entry.key == "socket") {
        d.socket_path = path(v, key, true);
      } else if (entry.key == "state_dir") {
        d.state_dir = path(v, key, true);
      } else if (entry.key == "log_level") {
        const auto level = detail::read_choice(v, key, {"trace", "debug", "info", "warn", "error"});
        d.log_level = level == "trace"   ? LogLevel::trace
                      : level == "debug" ? LogLevel::debug
                      : level == "info"  ? LogLevel::info
                      : level == "warn"  ? LogLevel::warn
                                         : LogLevel::error;
      } else if (entry.key == "max_client_queue_bytes") {
        d.max_client_queue_bytes = detail::read_integer_in(
            v, key, kMinClientQueueBytes, 4096 * kMiB, "bytes; at least one 16 MiB protocol line");
      } else if (entry.key == "heartbeat_interval_ms") {
        d.heartbeat_interval_ms = detail::read_integer_in(v, key, 100, 600000, "milliseconds");
      } else if (entry.key == "runner_restart_backoff_ms") {
        d.runner_restart_backoff_ms = detail::read_integer_in(v, key, 10, 600000, "milliseconds");
      }
    }
  }

  void sandbox(const toml::value& table) {
    detail::require_table(table, "sandbox");
    detail::refuse_unknown_keys(
        table, "sandbox", {"mode", "worktree_roots", "read_paths", "hidden_paths", "tmp_size_mb"});
    auto& sb = s_.sandbox;
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "sandbox." + entry.key;
      note(key, v);
      if (entry.key == "mode") {
        sb.mode = detail::read_choice(v, key, {"on", "off"}) == "off" ? SandboxMode::off
                                                                      : SandboxMode::on;
      } else if (entry.key == "worktree_roots") {
        sb.worktree_roots = path_list(v, key);
      } else if (entry.key == "read_paths") {
        sb.read_paths = path_list(v, key);
      } else if (entry.key == "hidden_paths") {
        sb.hidden_paths = path_list(v, key);
      } else if (entry.key == "tmp_size_mb") {
        sb.tmp_size_mb = detail::read_integer_in(v, key, 1, 65536, "MiB");
      }
    }
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
      detail::require_table(lt, base);
      detail::refuse_unknown_keys(lt, base,
                                  {"slots", "network", "memory_mb", "pids_max", "cpu_weight",
                                   "warm_workers", "warm_worker_idle_s", "address_space_mb"});
      auto& ls = s_.lanes[lane];
      for (const auto& entry : detail::entries(lt)) {
        const toml::value& v = *entry.value;
        const std::string key = base + "." + entry.key;
        note(key, v);
        if (entry.key == "slots") {
          ls.slots = detail::read_integer_in(v, key, 1, 256, "concurrent jobs");
        } else if (entry.key == "network") {
          ls.network = detail::read_bool(v, key);
          if (lane == lanes::no_net && ls.network) {
            fail(v, key,
                 "lane no-net never has network access; give a tool that needs the network "
                 "lane \"net\" in catalog.toml instead");
          }
        } else if (entry.key == "memory_mb") {
          // 0: no memory limit at all.
          ls.memory_mb = detail::read_integer(v, key) == 0
                             ? 0
                             : detail::read_integer_in(v, key, 16, 1024 * 1024, "MiB (0: none)");
        } else if (entry.key == "address_space_mb") {
          ls.address_space_mb = detail::read_integer(v, key) == 0
                                    ? std::optional<std::int64_t>()
                                    : detail::read_integer_in(v, key, 64, 1024 * 1024,
                                                              "MiB of address space (0: none)");
        } else if (entry.key == "pids_max") {
          ls.pids_max = detail::read_integer_in(v, key, 8, 4194304, "processes");
        } else if (entry.key == "cpu_weight") {
          ls.cpu_weight = detail::read_integer_in(v, key, 1, 10000, "cgroup cpu.weight");
        } else if (entry.key == "warm_workers") {
          ls.warm_workers = detail::read_integer_in(v, key, 0, 256, "resident workers");
        } else if (entry.key == "warm_worker_idle_s") {
          ls.warm_worker_idle_s = detail::read_integer_in(v, key, 1, 86400, "seconds");
        }
      }
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
    detail::require_table(table, "approval");
    detail::refuse_unknown_keys(table, "approval", {"default", "timeout_s", "tools", "lanes"});
    auto& a = s_.approval;
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "approval." + entry.key;
      note(key, v);
      if (entry.key == "default") {
        a.default_policy = parse_policy(detail::read_choice(v, key, {"auto", "ask", "deny"}));
      } else if (entry.key == "timeout_s") {
        a.timeout_s = detail::read_integer_in(v, key, 1, 86400, "seconds");
      } else if (entry.key == "tools") {
        policy_map(v, key, a.tools, false);
      } else if (entry.key == "lanes") {
        policy_map(v, key, a.lanes, true);
      }
    }
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

  void web_fetch(const toml::value& table) {
    detail::require_table(table, "web_fetch");
    detail::refuse_unknown_keys(table, "web_fetch", {"allowed_networks"});
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "web_fetch." + entry.key;
      note(key, v);
      s_.web_fetch.allowed_networks = network_list(v, key);
    }
  }

  void web_search(const toml::value& table) {
    detail::require_table(table, "web_search");
    WebSearchSettings& w = s_.web_search;
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "web_search." + entry.key;
      if (w.providers.contains(entry.key)) {
        search_provider(v, key, w.providers[entry.key], entry.key == "google");
        continue;
      }
      note(key, v);
      if (entry.key == "provider") {
        w.provider = detail::read_choice(v, key, {"brave", "google", "serper", "searxng", ""});
      } else if (entry.key == "allowed_networks") {
        w.allowed_networks = network_list(v, key);
      } else if (entry.key == "max_retries") {
        w.max_retries = detail::read_integer_in(v, key, 0, 10, "retries");
      } else if (entry.key == "retry_base_delay_ms") {
        w.retry_base_delay_ms = detail::read_integer_in(v, key, 1, 60'000, "milliseconds");
      } else if (entry.key == "retry_max_delay_ms") {
        w.retry_max_delay_ms = detail::read_integer_in(v, key, 1, 60'000, "milliseconds");
      } else {
        fail(v, key,
             "unknown key; [web_search] has provider, allowed_networks, max_retries, "
             "retry_base_delay_ms, retry_max_delay_ms and the tables [web_search.brave], "
             "[web_search.google], [web_search.serper], [web_search.searxng]");
      }
    }
  }

  // [web_search.KIND]; only google has cx, and searxng needs no key.
  void search_provider(const toml::value& table, const std::string& base, SearchProviderSettings& p,
                       bool google) {
    detail::require_table(table, base);
    refuse_keys_in_file(table, base);
    if (google) {
      detail::refuse_unknown_keys(table, base, {"base_url", "api_key_env", "key_file", "cx"});
    } else {
      detail::refuse_unknown_keys(table, base, {"base_url", "api_key_env", "key_file"});
    }
    note(base, table);
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = base + "." + entry.key;
      note(key, v);
      if (entry.key == "base_url") {
        p.base_url = http_url(v, key);
      } else if (entry.key == "api_key_env") {
        p.api_key_env = env_name(v, key);
      } else if (entry.key == "key_file") {
        p.key_file = path(v, key, true);
      } else if (entry.key == "cx") {
        p.cx = detail::read_string(v, key);
      }
    }
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

  static std::string env_name(const toml::value& v, const std::string& key) {
    std::string name = detail::read_string(v, key);
    if (!name.empty() && !is_env_name(name)) {
      fail(v, key,
           "must be the NAME of an environment variable (letters, digits, _), not the key "
           "itself");
    }
    return name;
  }

  void egress(const toml::value& table) {
    detail::require_table(table, "egress");
    detail::refuse_unknown_keys(table, "egress", {"allowed_networks", "port", "lanes"});
    auto& e = s_.egress;
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "egress." + entry.key;
      note(key, v);
      if (entry.key == "allowed_networks") {
        e.allowed_networks = network_list(v, key);
      } else if (entry.key == "port") {
        e.port = detail::read_integer_in(v, key, 1, 65535, "TCP port inside each lane");
      } else if (entry.key == "lanes") {
        detail::require_table(v, key);
        for (const auto& lane_entry : detail::entries(v)) {
          const std::string base = key + "." + lane_entry.key;
          const toml::value& lt = *lane_entry.value;
          if (lane_entry.key != lanes::net && lane_entry.key != lanes::heavy) {
            fail(lt, base, "only the lanes with network have egress rules: net and heavy");
          }
          detail::require_table(lt, base);
          detail::refuse_unknown_keys(lt, base, {"allow_domains", "deny_domains"});
          auto& rules = e.lanes[lane_entry.key];
          for (const auto& list : detail::entries(lt)) {
            const std::string list_key = base + "." + list.key;
            note(list_key, *list.value);
            std::vector<std::string> names = detail::read_string_list(*list.value, list_key);
            if (auto parsed = DomainList::parse(names, list_key); !parsed) {
              fail(*list.value, list_key, parsed.error().message + "; " + parsed.error().hint);
            }
            (list.key == "allow_domains" ? rules.allow_domains : rules.deny_domains) =
                std::move(names);
          }
        }
      }
    }
  }

  void commands(const toml::value& table) {
    detail::require_table(table, "commands");
    detail::refuse_unknown_keys(table, "commands",
                                {"build", "test", "validate", "lint", "lint_files"});
    for (const auto& entry : detail::entries(table)) {
      const std::string key = "commands." + entry.key;
      note(key, *entry.value);
      if (entry.key == "lint_files") {
        s_.commands.lint_files = detail::read_string_list(*entry.value, key);
        continue;
      }
      const std::string command = detail::read_string(*entry.value, key);
      if (entry.key == "build") s_.commands.build = command;
      if (entry.key == "test") s_.commands.test = command;
      if (entry.key == "validate") s_.commands.validate = command;
      if (entry.key == "lint") s_.commands.lint = command;
    }
  }

  void context(const toml::value& table) {
    detail::require_table(table, "context");
    detail::refuse_unknown_keys(
        table, "context",
        {"handoff_percent", "tool_result_max_bytes", "tool_result_max_bytes_by_tool",
         "instructions_files", "instructions_max_bytes", "tree_max_bytes"});
    auto& c = s_.context;
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "context." + entry.key;
      note(key, v);
      if (entry.key == "handoff_percent") {
        c.handoff_percent = detail::read_integer_in(v, key, 10, 95, "percent of the window");
      } else if (entry.key == "tool_result_max_bytes") {
        c.tool_result_max_bytes = detail::read_integer_in(v, key, 1024, 16 * kMiB, "bytes");
      } else if (entry.key == "tool_result_max_bytes_by_tool") {
        detail::require_table(v, key);
        for (const auto& tool : detail::entries(v)) {
          const std::string tool_key = key + "." + tool.key;
          note(tool_key, *tool.value);
          c.tool_result_max_bytes_by_tool[tool.key] =
              detail::read_integer_in(*tool.value, tool_key, 1024, 16 * kMiB, "bytes");
        }
      } else if (entry.key == "instructions_files") {
        c.instructions_files = detail::read_string_list(v, key);
        for (const std::string& file : c.instructions_files) {
          if (file.empty() || file.front() == '/' || file.find("..") != std::string::npos) {
            fail(v, key,
                 "names files relative to the repository's top, without '..' (got '" + file + "')");
          }
        }
      } else if (entry.key == "instructions_max_bytes") {
        c.instructions_max_bytes = detail::read_integer_in(v, key, 0, 1 * kMiB, "bytes");
      } else if (entry.key == "tree_max_bytes") {
        c.tree_max_bytes = detail::read_integer_in(v, key, 0, 1 * kMiB, "bytes");
      }
    }
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
      detail::require_table(lt, base);
      detail::refuse_unknown_keys(
          lt, base, {"tools", "prompt_template", "validation_command", "max_iterations"});
      auto& loop = s_.loops[loop_entry.key];
      for (const auto& entry : detail::entries(lt)) {
        const toml::value& v = *entry.value;
        const std::string key = base + "." + entry.key;
        note(key, v);
        if (entry.key == "tools") {
          loop.tools = detail::read_string_list(v, key);
          std::set<std::string> seen;
          for (std::size_t i = 0; i < loop.tools.size(); ++i) {
            if (!seen.insert(loop.tools[i]).second) {
              fail(v.as_array()[i], key + "[" + std::to_string(i) + "]",
                   "names tool '" + loop.tools[i] + "' twice");
            }
          }
        } else if (entry.key == "prompt_template") {
          const std::string text = detail::read_string(v, key);
          if (text.empty()) fail(v, key, "must name a built-in template or a template file");
          loop.prompt_template =
              text.find('/') == std::string::npos && text != "~" ? text : path(v, key, false);
        } else if (entry.key == "validation_command") {
          loop.validation_command = detail::read_string(v, key);
        } else if (entry.key == "max_iterations") {
          loop.max_iterations = detail::read_integer_in(v, key, 1, 10000, "iterations");
        }
      }
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
      detail::refuse_unknown_keys(
          pt, base,
          {"kind", "base_url", "model", "api_key_env", "key_file", "max_retries", "script",
           "stream", "context_window", "max_tokens", "prompt_caching", "connect_timeout_ms",
           "first_byte_timeout_ms", "idle_timeout_ms", "retry_base_delay_ms", "retry_max_delay_ms",
           "max_in_flight", "max_tokens_field", "reasoning_effort"});
      note(base, pt);
      auto existing = s_.providers.find(name);
      ProviderSettings p;
      if (existing != s_.providers.end()) {
        p = existing->second;
      } else {
        if (!pt.contains("kind")) {
          fail(pt, base, "a new provider must set kind: \"anthropic\", \"openai\" or \"scripted\"");
        }
        p = provider_defaults(parse_provider_kind(detail::read_choice(
            pt.at("kind"), base + ".kind", {"anthropic", "openai", "scripted"})));
      }
      for (const auto& entry : detail::entries(pt)) {
        const toml::value& v = *entry.value;
        const std::string key = base + "." + entry.key;
        note(key, v);
        if (entry.key == "kind") {
          p.kind =
              parse_provider_kind(detail::read_choice(v, key, {"anthropic", "openai", "scripted"}));
        } else if (entry.key == "base_url") {
          p.base_url = http_url(v, key);
        } else if (entry.key == "model") {
          p.model = detail::read_string(v, key);
        } else if (entry.key == "api_key_env") {
          p.api_key_env = env_name(v, key);
        } else if (entry.key == "key_file") {
          p.key_file = path(v, key, true);
        } else if (entry.key == "max_retries") {
          p.max_retries = detail::read_integer_in(v, key, 0, 20, "retries");
        } else if (entry.key == "script") {
          p.script = path(v, key, true);
        } else if (entry.key == "stream") {
          p.stream = detail::read_bool(v, key);
        } else if (entry.key == "context_window") {
          p.context_window = detail::read_integer_in(v, key, 0, 100'000'000, "tokens");
        } else if (entry.key == "max_tokens") {
          p.max_tokens = detail::read_integer_in(v, key, 1, 10'000'000, "tokens");
        } else if (entry.key == "prompt_caching") {
          p.prompt_caching = detail::read_bool(v, key);
        } else if (entry.key == "connect_timeout_ms") {
          p.connect_timeout_ms = detail::read_integer_in(v, key, 100, 600'000, "milliseconds");
        } else if (entry.key == "first_byte_timeout_ms") {
          p.first_byte_timeout_ms = detail::read_integer_in(v, key, 100, 3'600'000, "milliseconds");
        } else if (entry.key == "idle_timeout_ms") {
          p.idle_timeout_ms = detail::read_integer_in(v, key, 100, 3'600'000, "milliseconds");
        } else if (entry.key == "retry_base_delay_ms") {
          p.retry_base_delay_ms = detail::read_integer_in(v, key, 1, 600'000, "milliseconds");
        } else if (entry.key == "retry_max_delay_ms") {
          p.retry_max_delay_ms = detail::read_integer_in(v, key, 1, 3'600'000, "milliseconds");
        } else if (entry.key == "max_in_flight") {
          p.max_in_flight = detail::read_integer_in(v, key, 0, 10'000, "model calls; 0: no limit");
        } else if (entry.key == "max_tokens_field") {
          p.max_tokens_field = detail::read_choice(v, key, {"max_tokens", "max_completion_tokens"});
        } else if (entry.key == "reasoning_effort") {
          p.reasoning_effort = detail::read_string(v, key);
          if (!p.reasoning_effort.empty()) {
            p.reasoning_effort = detail::read_choice(v, key, {"minimal", "low", "medium", "high"});
          }
        }
      }
      s_.providers[name] = std::move(p);
    }
  }

  void llm(const toml::value& table) {
    detail::require_table(table, "llm");
    detail::refuse_unknown_keys(table, "llm", {"provider"});
    if (table.contains("provider")) {
      const toml::value& v = table.at("provider");
      note("llm.provider", v);
      s_.llm.provider = detail::read_string(v, "llm.provider");
    }
  }

  // A non-negative number of USD (a TOML integer or float).
  double usd(const toml::value& v, const std::string& key) {
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

  void prices(const toml::value& table) {
    detail::require_table(table, "prices");
    for (const auto& model_entry : detail::entries(table)) {
      const std::string base = "prices.\"" + model_entry.key + "\"";
      const toml::value& mt = *model_entry.value;
      detail::require_table(mt, base);
      detail::refuse_unknown_keys(mt, base,
                                  {"input_usd_per_mtok", "output_usd_per_mtok",
                                   "cache_read_usd_per_mtok", "cache_write_usd_per_mtok"});
      ModelPrice& price = s_.prices[model_entry.key];
      for (const auto& entry : detail::entries(mt)) {
        const std::string key = base + "." + entry.key;
        note(key, *entry.value);
        const double value = usd(*entry.value, key);
        if (entry.key == "input_usd_per_mtok") price.input = value;
        if (entry.key == "output_usd_per_mtok") price.output = value;
        if (entry.key == "cache_read_usd_per_mtok") price.cache_read = value;
        if (entry.key == "cache_write_usd_per_mtok") price.cache_write = value;
      }
    }
  }

  void budget_limits(const toml::value& table, const std::string& base, BudgetLimits& limits) {
    detail::require_table(table, base);
    detail::refuse_unknown_keys(
        table, base,
        {"turns_per_iteration", "tool_calls", "wall_clock_s", "input_tokens", "output_tokens",
         "cache_read_tokens", "cache_write_tokens", "usd"});
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = base + "." + entry.key;
      note(key, v);
      constexpr std::int64_t kMax = 1'000'000'000'000;
      if (entry.key == "usd") {
        limits.usd = usd(v, key);
      } else if (entry.key == "turns_per_iteration") {
        limits.turns_per_iteration = detail::read_integer_in(v, key, 1, 100000, "model turns");
      } else if (entry.key == "tool_calls") {
        limits.tool_calls = detail::read_integer_in(v, key, 1, kMax, "tool calls");
      } else if (entry.key == "wall_clock_s") {
        limits.wall_clock_s = detail::read_integer_in(v, key, 1, kMax, "seconds");
      } else {
        const std::int64_t tokens = detail::read_integer_in(v, key, 1, kMax, "tokens");
        if (entry.key == "input_tokens") limits.input_tokens = tokens;
        if (entry.key == "output_tokens") limits.output_tokens = tokens;
        if (entry.key == "cache_read_tokens") limits.cache_read_tokens = tokens;
        if (entry.key == "cache_write_tokens") limits.cache_write_tokens = tokens;
      }
    }
  }

  void budgets(const toml::value& table) {
    detail::require_table(table, "budgets");
    detail::refuse_unknown_keys(table, "budgets", {"loop", "global", "plan"});
    for (const auto& entry : detail::entries(table)) {
      budget_limits(*entry.value, "budgets." + entry.key,
                    entry.key == "loop"     ? s_.budgets.loop
                    : entry.key == "global" ? s_.budgets.global
                                            : s_.budgets.plan);
    }
  }

  void loop_health(const toml::value& table) {
    detail::require_table(table, "loop_health");
    detail::refuse_unknown_keys(
        table, "loop_health",
        {"repeated_call_limit", "unchanged_iteration_limit", "malformed_call_limit"});
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "loop_health." + entry.key;
      note(key, v);
      const std::int64_t value = detail::read_integer_in(v, key, 1, 1000, "times");
      if (entry.key == "repeated_call_limit") s_.loop_health.repeated_call_limit = value;
      if (entry.key == "unchanged_iteration_limit")
        s_.loop_health.unchanged_iteration_limit = value;
      if (entry.key == "malformed_call_limit") s_.loop_health.malformed_call_limit = value;
    }
  }

  void worktrees(const toml::value& table) {
    detail::require_table(table, "worktrees");
    detail::refuse_unknown_keys(table, "worktrees",
                                {"folder", "keep_finished_s", "include", "setup", "copy_limit_mb"});
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "worktrees." + entry.key;
      note(key, v);
      if (entry.key == "folder") {
        s_.worktrees.folder = path(v, key, true);
      } else if (entry.key == "keep_finished_s") {
        s_.worktrees.keep_finished_s =
            detail::read_integer_in(v, key, -1, 10 * 365 * 86400, "seconds; -1: never");
      } else if (entry.key == "include") {
        // Files of the checkout: relative, within it (loops/git/worktree_prep.hpp).
        s_.worktrees.prep.include = detail::read_string_list(v, key);
        for (std::size_t i = 0; i < s_.worktrees.prep.include.size(); ++i) {
          detail::check_include_pattern(v.as_array()[i], key + "[" + std::to_string(i) + "]",
                                        s_.worktrees.prep.include[i]);
        }
      } else if (entry.key == "setup") {
        s_.worktrees.prep.setup = detail::read_string(v, key);
      } else if (entry.key == "copy_limit_mb") {
        s_.worktrees.copy_limit_mb = detail::read_integer_in(v, key, 1, 1024 * 1024, "MiB");
      }
    }
  }

  void scheduler(const toml::value& table) {
    detail::require_table(table, "scheduler");
    detail::refuse_unknown_keys(table, "scheduler",
                                {"max_running", "max_running_plan", "max_running_spec",
                                 "max_running_phase", "max_running_code"});
    auto& sc = s_.scheduler;
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "scheduler." + entry.key;
      note(key, v);
      const std::int64_t value = detail::read_integer_in(v, key, 0, 10'000, "loops; 0: no limit");
      if (entry.key == "max_running") sc.max_running = value;
      if (entry.key == "max_running_plan") sc.max_running_plan = value;
      if (entry.key == "max_running_spec") sc.max_running_spec = value;
      if (entry.key == "max_running_phase") sc.max_running_phase = value;
      if (entry.key == "max_running_code") sc.max_running_code = value;
    }
  }

  void merges(const toml::value& table) {
    detail::require_table(table, "merges");
    detail::refuse_unknown_keys(table, "merges", {"resolve_max_iterations"});
    if (table.contains("resolve_max_iterations")) {
      const toml::value& v = table.at("resolve_max_iterations");
      note("merges.resolve_max_iterations", v);
      s_.merges.resolve_max_iterations =
          detail::read_integer_in(v, "merges.resolve_max_iterations", 1, 100, "iterations");
    }
  }

  void memory(const toml::value& table) {
    detail::require_table(table, "memory");
    detail::refuse_unknown_keys(table, "memory", {"max_note_bytes", "max_notes"});
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "memory." + entry.key;
      note(key, v);
      if (entry.key == "max_note_bytes") {
        s_.memory.max_note_bytes = detail::read_integer_in(v, key, 64, 1024 * 1024, "bytes");
      } else if (entry.key == "max_notes") {
        s_.memory.max_notes = detail::read_integer_in(v, key, 1, 1'000'000, "notes");
      }
    }
  }

  void oracle(const toml::value& table) {
    detail::require_table(table, "oracle");
    detail::refuse_unknown_keys(
        table, "oracle",
        {"provider", "model", "max_tokens", "max_files", "max_file_bytes", "max_total_bytes"});
    auto& o = s_.oracle;
    for (const auto& entry : detail::entries(table)) {
      const toml::value& v = *entry.value;
      const std::string key = "oracle." + entry.key;
      note(key, v);
      if (entry.key == "provider") {
        o.provider = detail::read_string(v, key);
      } else if (entry.key == "model") {
        o.model = detail::read_string(v, key);
      } else if (entry.key == "max_tokens") {
        o.max_tokens = detail::read_integer_in(v, key, 1, 1'000'000, "tokens");
      } else if (entry.key == "max_files") {
        o.max_files = detail::read_integer_in(v, key, 0, 100, "files");
      } else if (entry.key == "max_file_bytes") {
        o.max_file_bytes = detail::read_integer_in(v, key, 1024, 16 * 1024 * 1024, "bytes");
      } else if (entry.key == "max_total_bytes") {
        o.max_total_bytes = detail::read_integer_in(v, key, 1024, 64 * 1024 * 1024, "bytes");
      }
    }
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
