// The catalog's output schemas against what the tools really return (issue
// 14: MCP clients check structuredContent against outputSchema strictly and
// reject a result that does not match). Each built-in tool that has an output
// schema is called through the real looprd, its lane runners and loopr-tool
// (or looprd's hosted tools), in the success cases that shape its output
// differently; every output must pass the schema tool.list publishes, with
// the daemon's own validator. And no schema may list a key that no call
// produced, except the few named below that no test can provoke — so a key a
// tool stops printing is noticed too.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "config/catalog.hpp"
#include "config/schema_check.hpp"
#include "daemon/json_schema.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/support/http_test_server.hpp"
#include "tests/support/scripted_http_server.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Every tool with an output schema, and the test below that calls it.
const std::map<std::string, std::string> kCoveredTools = {{"read_file", "FileTools"},
                                                          {"write_file", "FileTools"},
                                                          {"edit_file", "FileTools"},
                                                          {"file_delete", "FileTools"},
                                                          {"list_directory", "SearchTools"},
                                                          {"glob", "SearchTools"},
                                                          {"grep", "SearchTools"},
                                                          {"run_command", "CommandTools"},
                                                          {"run_command_isolated", "CommandTools"},
                                                          {"build", "CommandTools"},
                                                          {"test", "CommandTools"},
                                                          {"validate", "CommandTools"},
                                                          {"web_fetch", "NetTools"},
                                                          {"web_search", "NetTools"},
                                                          {"memory_save", "MemoryTools"},
                                                          {"memory_update", "MemoryTools"},
                                                          {"memory_search", "MemoryTools"},
                                                          {"memory_delete", "MemoryTools"},
                                                          {"oracle", "Oracle"}};

// Keys a schema lists that these tests cannot make a tool print, by the
// schema's path ("results[]/loop_id"), and why.
const std::set<std::string> kKeysNoTestProvokes = {
    // Only when the runner stops a command from outside (its job timeout, a
    // cancel): the call then ends timeout or cancelled, never success.
    "interrupted",
    // A conversation hit needs a loop's transcript in the store.
    "results[]/loop_id",
    "results[]/iteration",
    // A hit cut to fit the output cap needs a note larger than a note may be.
    "results[]/text_truncated",
    // An answer longer than the oracle's output cap.
    "answer_truncated",
};

// The paths a schema's properties name: "entries[]/path" for a property of
// the objects of an array.
void schema_paths(const json& schema, const std::string& prefix, std::set<std::string>& out) {
  if (!schema.is_object()) return;
  if (auto properties = schema.find("properties"); properties != schema.end()) {
    for (const auto& [name, sub] : properties->items()) {
      const std::string path = prefix.empty() ? name : prefix + "/" + name;
      out.insert(path);
      schema_paths(sub, path, out);
    }
  }
  if (auto items = schema.find("items"); items != schema.end()) {
    schema_paths(*items, prefix + "[]", out);
  }
  if (auto alternatives = schema.find("oneOf"); alternatives != schema.end()) {
    for (const json& alternative : *alternatives)
      schema_paths(alternative, prefix, out);
  }
}

// The same paths, of the keys a value holds.
void value_paths(const json& value, const std::string& prefix, std::set<std::string>& out) {
  if (value.is_object()) {
    for (const auto& [name, sub] : value.items()) {
      const std::string path = prefix.empty() ? name : prefix + "/" + name;
      out.insert(path);
      value_paths(sub, path, out);
    }
  } else if (value.is_array()) {
    for (const json& element : value)
      value_paths(element, prefix + "[]", out);
  }
}

std::string worktree_toml(const std::string& extra) {
  return "[commands]\nbuild = \"echo built\"\ntest = \"echo 'test failed' >&2; exit 1\"\n"
         "validate = \"true\"\n" +
         extra;
}

class OutputSchemaTest : public ::testing::Test {
 protected:
  void start(const std::string& extra_toml = {}, const std::string& catalog_toml = {}) {
    daemon_ =
        std::make_unique<DaemonHarness>(DaemonOptions{worktree_toml(extra_toml), catalog_toml, {}});
    daemon_->start();
    auto opened = client::ControlClient::open(daemon_->socket_path());
    ASSERT_TRUE(opened) << opened.error().message;
    client_.emplace(std::move(*opened));
    auto listed = client_->call("tool.list");
    ASSERT_TRUE(listed) << listed.error().message;
    for (const json& tool : (*listed)["tools"]) {
      if (!tool.contains("output_schema")) continue;
      const std::string name = tool["name"];
      auto compiled = daemon::JsonSchema::compile(tool["output_schema"]);
      ASSERT_TRUE(compiled) << name << ": " << compiled.error().message;
      schemas_.emplace(name, std::move(*compiled));
      raw_schemas_[name] = tool["output_schema"];
    }
  }

  void write(const std::string& path, const std::string& text) {
    daemon_->tree().write("work/repo/" + path, text);
  }
  std::string path(const std::string& relative) const {
    return daemon_->worktree() + "/" + relative;
  }

  // tool.call on this test's one connection (so reads count for later
  // writes); the call must succeed and its output match the tool's schema.
  json call(const std::string& tool, json args) {
    auto reply = client_->call(
        "tool.call", {{"tool", tool}, {"args", args}, {"worktree", daemon_->worktree()}}, 120s);
    if (!reply) {
      ADD_FAILURE() << tool << " " << args.dump() << ": " << reply.error().message;
      return json();
    }
    if (reply->value("status", "") != "success") {
      ADD_FAILURE() << tool << " " << args.dump() << " did not succeed: " << reply->dump(2) << "\n"
                    << daemon_->log();
      return json();
    }
    const json& output = (*reply)["output"];
    auto schema = schemas_.find(tool);
    if (schema == schemas_.end()) {
      ADD_FAILURE() << tool << " has no output_schema in tool.list";
      return output;
    }
    if (auto valid = schema->second.validate(output); !valid) {
      ADD_FAILURE() << tool << " " << args.dump()
                    << ": the output does not match the output schema: " << valid.error().message
                    << "\noutput: " << output.dump(2);
    }
    value_paths(output, "", seen_[raw_schemas_[tool].dump()]);
    called_.insert(tool);
    return output;
  }

  // Every key the schemas of `tools` list was in some output of this test
  // (tools sharing one schema share what they showed).
  void expect_every_key_seen(std::initializer_list<const char*> tools) {
    for (const char* tool : tools) {
      SCOPED_TRACE(tool);
      EXPECT_TRUE(called_.count(tool)) << tool << " was not called";
      const json& schema = raw_schemas_[tool];
      std::set<std::string> listed;
      schema_paths(schema, "", listed);
      const std::set<std::string>& seen = seen_[schema.dump()];
      for (const std::string& key : listed) {
        if (seen.count(key) || kKeysNoTestProvokes.count(key)) continue;
        ADD_FAILURE() << tool << ": the schema lists '" << key
                      << "', which no output of this test had";
      }
    }
  }

  std::unique_ptr<DaemonHarness> daemon_;
  std::optional<client::ControlClient> client_;
  std::map<std::string, daemon::JsonSchema> schemas_;
  std::map<std::string, json> raw_schemas_;
  std::map<std::string, std::set<std::string>> seen_;  // by the schema's text
  std::set<std::string> called_;
};

TEST_F(OutputSchemaTest, EveryToolWithAnOutputSchemaIsCoveredAndEverySchemaIsUsable) {
  ASSERT_NO_FATAL_FAILURE(start());
  const config::Catalog builtin = config::Catalog::builtin();
  std::set<std::string> with_schema;
  for (const auto& [name, schema] : raw_schemas_) {
    SCOPED_TRACE(name);
    with_schema.insert(name);
    const auto problem = config::check_tool_schema(schema);
    EXPECT_FALSE(problem) << *problem;
    // tool.list publishes the catalog's schema as it is.
    const config::ToolSpec* spec = builtin.find(name);
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(schema, spec->output_schema);
  }
  std::set<std::string> covered;
  for (const auto& [name, test] : kCoveredTools)
    covered.insert(name);
  EXPECT_EQ(with_schema, covered) << "a tool with an output schema needs its calls here";
  // And a tool without one is listed without the key.
  auto listed = client_->call("tool.list");
  ASSERT_TRUE(listed);
  for (const json& tool : (*listed)["tools"]) {
    if (tool["name"] == "complete_task") {
      EXPECT_FALSE(tool.contains("output_schema"));
    }
  }
}

TEST_F(OutputSchemaTest, FileTools) {
  ASSERT_NO_FATAL_FAILURE(start());
  write("small.txt", "one\ntwo\nthree\n");
  write("empty.txt", "");
  write("crlf.txt", "first\r\nsecond\r\n");
  write("latin1.txt", "caf\xe9\n");
  write("long.txt", std::string(2500, 'x') + "\nshort\n");
  write("binary.bin", std::string("\x7f"
                                  "ELF\0\0\1",
                                  7));
  // Over read_file's 64 MiB edit limit without using the disk: text at the
  // start (past the 8 KiB sniffed for NUL bytes), a hole after it (only the
  // first page is read).
  {
    std::string head;
    for (int i = 1; i <= 2000; ++i)
      head += "line " + std::to_string(i) + "\n";
    write("huge.log", head);
    ASSERT_EQ(::truncate(path("huge.log").c_str(), (65LL << 20)), 0);
  }

  // read_file: a whole file, a range, an empty file, CRLF, bytes that are
  // not UTF-8, a line over 2000 characters, a file too large to edit.
  json whole = call("read_file", {{"path", "small.txt"}});
  EXPECT_EQ(whole["more"], false);
  json range = call("read_file", {{"path", "small.txt"}, {"offset", 2}, {"limit", 1}});
  EXPECT_EQ(range["next_offset"], 3);
  EXPECT_EQ(call("read_file", {{"path", "empty.txt"}})["total_lines"], 0);
  EXPECT_EQ(call("read_file", {{"path", "crlf.txt"}})["line_endings"], "crlf");
  EXPECT_EQ(call("read_file", {{"path", "latin1.txt"}})["invalid_utf8"], true);
  EXPECT_EQ(call("read_file", {{"path", "long.txt"}})["lines_cut"], 1);
  json huge = call("read_file", {{"path", "huge.log"}, {"limit", 10}});
  EXPECT_TRUE(huge["total_lines"].is_null()) << huge.dump();
  EXPECT_EQ(huge["too_large_to_edit"], true);
  // 2000 lines of 200 characters: a default page over read_file's 100 kB
  // cap ends at the last whole line that fits, with a hint.
  {
    std::string wide;
    for (int i = 0; i < 2000; ++i)
      wide += std::string(200, 'w') + "\n";
    write("wide.txt", wide);
  }
  json cut_page = call("read_file", {{"path", "wide.txt"}});
  EXPECT_EQ(cut_page["more"], true);
  EXPECT_EQ(cut_page["next_offset"], cut_page["lines_returned"].get<int>() + 1);
  EXPECT_LE(cut_page.dump().size(), 100000u);
  EXPECT_TRUE(cut_page.contains("hint")) << cut_page.dump().substr(0, 200);
  // A binary file is refused: a failure, which no schema describes.
  auto refused = client_->call("tool.call", {{"tool", "read_file"},
                                             {"args", {{"path", "binary.bin"}}},
                                             {"worktree", daemon_->worktree()}});
  ASSERT_TRUE(refused);
  EXPECT_EQ((*refused)["status"], "failed");

  // write_file: a new file, then one overwritten after a read.
  EXPECT_EQ(call("write_file", {{"path", "new/made.txt"}, {"content", "made\n"}})["created"], true);
  EXPECT_EQ(call("write_file", {{"path", "small.txt"}, {"content", "1\n2\n3\n"}})["created"],
            false);

  // edit_file: one replacement, several, replace_all, a new file, CRLF, and
  // an edit at the end of a file without a final newline (notes).
  call("read_file", {{"path", "small.txt"}});
  EXPECT_EQ(
      call("edit_file",
           {{"path", "small.txt"}, {"old_string", "2"}, {"new_string", "two"}})["replacements"],
      1);
  call("edit_file",
       {{"path", "small.txt"},
        {"edits",
         {{{"old_string", "1"}, {"new_string", "one"}},
          {{"old_string", "3\n"}, {"new_string", "three\n"}, {"replace_all", true}}}}});
  EXPECT_EQ(call("edit_file",
                 {{"path", "fresh.txt"}, {"old_string", ""}, {"new_string", "hi\n"}})["created"],
            true);
  EXPECT_EQ(
      call("edit_file",
           {{"path", "crlf.txt"}, {"old_string", "second"}, {"new_string", "2nd"}})["line_endings"],
      "crlf");
  write("tail.txt", "alpha\nomega");
  call("read_file", {{"path", "tail.txt"}});
  json noted =
      call("edit_file", {{"path", "tail.txt"}, {"old_string", "omega"}, {"new_string", "OMEGA\n"}});
  EXPECT_TRUE(noted.contains("notes")) << noted.dump();

  // file_delete: a file, a folder with what is in it, a symlink.
  write("gone/a.txt", "a");
  write("gone/deeper/b.txt", "b");
  ASSERT_EQ(::symlink("small.txt", path("link.txt").c_str()), 0);
  EXPECT_EQ(call("file_delete", {{"path", "new/made.txt"}})["deleted"], "file");
  EXPECT_EQ(call("file_delete", {{"path", "gone"}, {"recursive", true}})["entries_removed"], 4);
  EXPECT_EQ(call("file_delete", {{"path", "link.txt"}})["deleted"], "symlink");

  expect_every_key_seen({"read_file", "write_file", "edit_file", "file_delete"});
}

TEST_F(OutputSchemaTest, SearchTools) {
  ASSERT_NO_FATAL_FAILURE(start());
  write("src/main.cpp", "int main() {\n  return 0;  // TODO\n}\n");
  write("src/util.cpp", "// TODO: more\nint util() { return 1; }\n");
  write("docs/readme.md", "nothing here\n");
  write("data.bin", std::string("TODO\0\1\2", 7));
  std::string many;
  for (int i = 0; i < 600; ++i)
    many += "needle " + std::to_string(i) + "\n";
  write("many.txt", many);
  for (int i = 0; i < 2001; ++i)
    write("crowd/f" + std::to_string(i), "");
  ASSERT_EQ(::symlink("src", path("src-link").c_str()), 0);

  // list_directory: one level, recursive, entries a .gitignore ignores (and
  // then listed too), and a listing over its cap.
  json top = call("list_directory", {});
  EXPECT_EQ(top["truncated"], false);
  write("vendor/.gitignore", "cache/\n");
  write("vendor/cache/blob.txt", "");
  write("vendor/lib.txt", "");
  json vendor = call("list_directory", {{"path", "vendor"}});
  EXPECT_EQ(vendor["ignored"], 1) << vendor.dump();
  EXPECT_EQ(vendor["entries"].size(), 2u) << vendor.dump();
  EXPECT_EQ(
      call("list_directory", {{"path", "vendor"}, {"include_ignored", true}})["entries"].size(),
      3u);
  call("list_directory", {{"path", "src"}, {"recursive", true}, {"max_depth", 2}});
  // 2001 entries: past list_directory's own 2000 and, at ~65 bytes each, past
  // its 100 kB output cap too: cut to fit that (loopr-tool/output_fit.hpp)
  // instead of failing as too_large.
  json crowd = call("list_directory", {{"path", "crowd"}});
  EXPECT_EQ(crowd["truncated"], true);
  EXPECT_GT(crowd["entries"].size(), 1000u);
  EXPECT_LT(crowd["entries"].size(), 2000u);
  EXPECT_LE(crowd.dump().size(), 100000u);
  EXPECT_NE(crowd["hint"].get<std::string>().find("output limit of 100000 bytes"),
            std::string::npos)
      << crowd["hint"];

  // glob: matches, none (with its hint), binary files left out.
  EXPECT_EQ(call("glob", {{"pattern", "**/*.cpp"}})["count"], 2);
  EXPECT_TRUE(call("glob", {{"pattern", "*.rs"}})["matches"].empty());
  EXPECT_EQ(call("glob", {{"pattern", "*.bin"}})["skipped_binary"], 1);

  // grep: each mode, with and without matches, context, a capped answer,
  // and a search where only a binary file would have matched.
  json content = call("grep", {{"pattern", "TODO"}, {"path", "src"}, {"context", 1}});
  EXPECT_EQ(content["match_count"], 2);
  EXPECT_EQ(call("grep", {{"pattern", "absent-word"}})["files_matched"], 0);
  EXPECT_EQ(call("grep", {{"pattern", "todo"},
                          {"case_insensitive", true},
                          {"output_mode", "files"},
                          {"file_pattern", "*.cpp"}})["files"]
                .size(),
            2u);
  EXPECT_EQ(call("grep", {{"pattern", "needle"}, {"output_mode", "count"}})["counts"][0]["count"],
            600);
  EXPECT_EQ(call("grep", {{"pattern", "needle"}, {"path", "many.txt"}})["truncated"], true);
  // 100 matching lines of 1,900 bytes: under max_results, over the 100 kB
  // cap: whole lines are cut to fit.
  std::string wide;
  for (int i = 0; i < 100; ++i)
    wide += "wide " + std::to_string(i) + " " + std::string(1900, 'w') + "\n";
  write("wide.txt", wide);
  json wide_lines = call("grep", {{"pattern", "^wide"}, {"path", "wide.txt"}});
  EXPECT_EQ(wide_lines["truncated"], true);
  EXPECT_EQ(wide_lines["match_count"], 100);
  const std::string cut = wide_lines["content"].get<std::string>();
  EXPECT_GT(cut.size(), 50000u);
  EXPECT_EQ(cut.rfind("wide.txt:1:wide 0 ", 0), 0u) << cut.substr(0, 80);
  EXPECT_EQ(cut.substr(cut.size() - 11), std::string(10, 'w') + "\n");  // a whole line last
  EXPECT_TRUE(call("grep", {{"pattern", "TODO"}, {"path", "data.bin"}}).contains("hint"));
  // The symlink to src was skipped, not followed.
  EXPECT_GE(call("grep", {{"pattern", "main"}})["skipped_symlinks"], 1);

  expect_every_key_seen({"list_directory", "glob", "grep"});
}

TEST_F(OutputSchemaTest, CommandTools) {
  ASSERT_NO_FATAL_FAILURE(start());
  // run_command: exit 0, a non-zero exit, its own timeout, a signal, bytes
  // that are not UTF-8, output over the cap, and the notes for a sandbox
  // refusal and a full disk.
  EXPECT_EQ(call("run_command", {{"command", "echo hello"}})["exit_code"], 0);
  json both = call("run_command", {{"command", "echo out; echo err >&2"}});
  EXPECT_EQ(both["output_bytes"], 8);
  EXPECT_EQ(both["output"].get<std::string>().size(), 8u);
  EXPECT_EQ(call("run_command", {{"command", "echo oops >&2; exit 3"}})["exit_code"], 3);
  json slow = call("run_command", {{"command", "sleep 30"}, {"timeout_ms", 200}});
  EXPECT_EQ(slow["timed_out"], true);
  EXPECT_EQ(slow["limit"]["name"], "time") << slow.dump();
  json killed = call("run_command", {{"command", "kill -9 $$"}});
  EXPECT_TRUE(killed["exit_code"].is_null()) << killed.dump();
  EXPECT_EQ(killed["signal"], 9);
  json bytes = call("run_command", {{"command", "printf 'caf\\351'; printf '\\377' >&2"}});
  EXPECT_TRUE(bytes.contains("stdout_base64") && bytes.contains("stderr_base64")) << bytes.dump();
  EXPECT_EQ(
      call("run_command", {{"command", "head -c 300000 /dev/zero | tr '\\0' a"}})["truncated"],
      true);
  EXPECT_TRUE(call("run_command", {{"command", "echo 'mkdir: Permission denied' >&2; exit 1"}})
                  .contains("sandbox_note"));
  EXPECT_TRUE(call("run_command", {{"command", "echo 'File size limit exceeded' >&2; exit 1"}})
                  .contains("disk_note"));
  write("sub/here.txt", "");
  EXPECT_EQ(call("run_command", {{"command", "ls"}, {"cwd", "sub"}})["stdout"], "here.txt\n");
  // A connection the egress proxy refused: its reason and the key that allows it.
  json refused = call("run_command", {{"command", "curl -sS --noproxy '' http://127.0.0.1:1/"}});
  EXPECT_EQ(refused["egress_refused"][0]["allow_key"], "[egress] allowed_networks")
      << refused.dump();

  // run_command_isolated, and the configured build, test and validate.
  EXPECT_EQ(call("run_command_isolated", {{"command", "echo quiet"}})["stdout"], "quiet\n");
  EXPECT_EQ(call("run_command_isolated", {{"command", "exit 2"}})["exit_code"], 2);
  EXPECT_EQ(call("build", json::object())["stdout"], "built\n");
  EXPECT_EQ(call("test", json::object())["exit_code"], 1);
  EXPECT_EQ(call("validate", json::object())["exit_code"], 0);

  expect_every_key_seen({"run_command", "run_command_isolated", "build", "test", "validate"});
}

TEST_F(OutputSchemaTest, NetTools) {
  HttpTestServer site("127.0.0.2");
  site.route("/page", {200, "text/html; charset=utf-8",
                       "<html><head><title>A page</title></head><body><h1>Hello</h1>"
                       "<p>Some <b>text</b>.</p></body></html>",
                       ""});
  site.route("/plain", {200, "text/plain", "just text\n", ""});
  site.route("/moved", {301, "text/plain", "", "/plain"});
  ScriptedHttpServer provider;
  provider.push(ScriptedReply::json(200, R"({"type": "search", "web": {"results": [
      {"title": "Loopr", "url": "https://loopr.dev/", "description": "agents in loops"},
      {"title": "Other", "url": "https://example.org/", "description": "more"}]}})"));
  provider.push(ScriptedReply::json(200, R"({"type": "search", "web": {"results": []}})"));
  TempTree keys;
  keys.write("brave.key", "BSA-test-key\n");
  ASSERT_EQ(::chmod(keys.path("brave.key").c_str(), 0600), 0);
  ASSERT_NO_FATAL_FAILURE(
      start("[web_fetch]\nallowed_networks = [\"127.0.0.2/32\"]\n"
            "[web_search]\nprovider = \"brave\"\nallowed_networks = [\"127.0.0.1/32\"]\n"
            "[web_search.brave]\napi_key_env = \"\"\nkey_file = \"" +
            keys.path("brave.key") + "\"\nbase_url = \"" + provider.base_url() + "\"\n"));

  // web_fetch: HTML as markdown, as text and as it is; plain text; a redirect.
  EXPECT_EQ(call("web_fetch", {{"url", site.base_url() + "/page"}})["title"], "A page");
  call("web_fetch", {{"url", site.base_url() + "/page"}, {"format", "text"}});
  EXPECT_EQ(call("web_fetch", {{"url", site.base_url() + "/page"}, {"format", "html"}})["format"],
            "html");
  EXPECT_EQ(call("web_fetch", {{"url", site.base_url() + "/plain"}})["content"], "just text\n");
  EXPECT_EQ(call("web_fetch", {{"url", site.base_url() + "/moved"}})["redirects"], 1);

  // web_search: results, and none.
  EXPECT_EQ(call("web_search", {{"query", "loopr"}})["results"].size(), 2u);
  EXPECT_TRUE(call("web_search", {{"query", "nothing at all"}})["results"].empty());

  expect_every_key_seen({"web_fetch", "web_search"});
}

TEST_F(OutputSchemaTest, MemoryTools) {
  ASSERT_NO_FATAL_FAILURE(start());
  const std::string id = call("memory_save", {{"content", "the staging host is app-stg-2"},
                                              {"tags", {"deploy"}}})["note_id"];
  call("memory_save", {{"content", "the user prefers tabs"}, {"scope", "user"}});
  call("memory_update", {{"note_id", id}, {"content", "the staging host is app-stg-3"}});
  EXPECT_EQ(call("memory_search", {{"query", "staging host"}})["results"].size(), 1u);
  EXPECT_EQ(call("memory_search", {{"query", "tabs"}, {"scope", "user"}})["results"].size(), 1u);
  EXPECT_TRUE(call("memory_search",
                   {{"query", "nothing-like-this"}, {"include_conversation", true}})["results"]
                  .empty());
  EXPECT_TRUE(call("memory_search", {{"query", "!!!"}})["results"].empty());
  EXPECT_EQ(call("memory_delete", {{"note_id", id}})["deleted"], true);

  expect_every_key_seen({"memory_save", "memory_update", "memory_search", "memory_delete"});
}

// An Anthropic Messages answer (not streamed).
std::string anthropic_answer(const std::string& text, const char* stop_reason) {
  return json{{"id", "msg_oracle"},
              {"type", "message"},
              {"role", "assistant"},
              {"model", "oracle-model"},
              {"content", {{{"type", "text"}, {"text", text}}}},
              {"stop_reason", stop_reason},
              {"stop_sequence", nullptr},
              {"usage", {{"input_tokens", 12}, {"output_tokens", 3}}}}
      .dump();
}

TEST_F(OutputSchemaTest, Oracle) {
  ScriptedHttpServer server;
  server.push(ScriptedReply::json(200, anthropic_answer("Looks right.", "end_turn")));
  server.push(ScriptedReply::json(200, anthropic_answer("Partly", "max_tokens")));
  server.push(ScriptedReply::json(200, anthropic_answer("No files needed.", "end_turn")));
  ::setenv("LOOPR_TEST_ORACLE_KEY", "sk-ant-oracle-test", 1);
  ASSERT_NO_FATAL_FAILURE(start(
      "[providers.sage]\nkind = \"anthropic\"\nbase_url = \"" + server.base_url() +
      "\"\nmodel = \"oracle-model\"\napi_key_env = \"LOOPR_TEST_ORACLE_KEY\"\nstream = false\n"
      "max_retries = 0\n"
      "[prices.\"oracle-model\"]\ninput_usd_per_mtok = 10.0\noutput_usd_per_mtok = 50.0\n"
      "[oracle]\nprovider = \"sage\"\nmax_file_bytes = 1024\nmax_total_bytes = 4096\n"));
  write("notes.txt", "flux capacitor notes\n");
  std::string big;
  for (int i = 0; i < 200; ++i)
    big += "line " + std::to_string(i) + " of a file too big to attach whole\n";
  write("big.txt", big);
  write("empty.txt", "");

  // Files whole, cut and empty; a context over max_total_bytes; no files.
  json answered = call("oracle", {{"question", "Is this right?"},
                                  {"files", {"notes.txt", "big.txt", "empty.txt"}},
                                  {"context", "we tried"}});
  EXPECT_EQ(answered["files"][0]["lines"], "1-1") << answered.dump();
  EXPECT_EQ(answered["files"][1]["truncated"], true) << answered.dump();
  EXPECT_TRUE(answered["files"][2]["lines"].is_null()) << answered.dump();
  json cut = call("oracle", {{"question", "Go on"}, {"context", std::string(5000, 'c')}});
  EXPECT_EQ(cut["context_truncated"], true);
  EXPECT_EQ(cut["stop_reason"], "max_tokens");
  call("oracle", {{"question", "Anything?"}, {"files", json::array()}});

  expect_every_key_seen({"oracle"});
}

}  // namespace
}  // namespace loopr::test
