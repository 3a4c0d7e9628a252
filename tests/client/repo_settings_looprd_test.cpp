// Repository settings against the real looprd and looprctl (issue 25): a
// repository's .loopr/loopr.toml names the commands its `test` tool and its
// loops' validation run — honoured only once the user trusts exactly its
// bytes, refused with its reason while untrusted, changed, or hostile (a
// symbolic link, too large, a key a repository may not set) — and the user's
// own [[repositories]] entry wins over it, which wins over [commands].
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/client/looprctl_run.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/daemon/loop_fixture.hpp"

namespace loopr::test {
namespace {

using nlohmann::json;

constexpr const char* kRepoFile =
    "[commands]\n"
    "test = \"echo repo-file-test\"\n"
    "validate = \"sh test.sh\"\n"
    "\n"
    "[worktrees]\n"
    "include = [\"node_modules\"]\n"
    "setup = \"echo setting-up\"\n";

class RepoSettingsLooprdTest : public ::testing::Test {
 protected:
  // looprd with `extra_toml`, a scripted provider solving the sample task,
  // and the sample project (with kRepoFile committed when `with_file`).
  void start(const std::string& extra_toml, bool with_file = true,
             std::vector<json> turns = solving_turns()) {
    const std::string toml = "[commands]\ntest = \"echo daemon-test\"\n" + extra_toml;
    daemon_ = start_scripted_looprd(scripts_, {{"scripted", std::move(turns)}}, toml, repo_);
    if (with_file) {
      write_repo_file(kRepoFile);
      git(repo_.path, {"add", ".loopr"});
      const GitOutput committed = git(repo_.path, {"-c", "user.name=t", "-c", "user.email=t@t",
                                                   "commit", "-q", "-m", "loopr settings"});
      ASSERT_EQ(committed.exit_code, 0) << committed.out;
    }
  }

  // Read, run the test tool, edit, complete; the first turn is slow so the
  // test can change the repository's settings while the loop runs.
  static std::vector<json> testing_turns() {
    return {turn({tool_call("r1", "read_file", {{"path", "answer.txt"}})}, {{"delay_ms", 1500}}),
            turn({tool_call("t1", "test", json::object())}),
            turn({tool_call("e1", "edit_file",
                            {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}})}),
            turn({tool_call("c1", "complete_task", {{"summary", "42"}})})};
  }

  static std::vector<json> solving_turns() {
    return {turn({tool_call("r1", "read_file", {{"path", "answer.txt"}})}),
            turn({tool_call("e1", "edit_file",
                            {{"path", "answer.txt"}, {"old_string", "41"}, {"new_string", "42"}})}),
            turn({tool_call("c1", "complete_task", {{"summary", "42"}})})};
  }

  void write_repo_file(const std::string& text) {
    std::filesystem::create_directories(repo_.path + "/.loopr");
    daemon_->tree().write("work/repo/.loopr/loopr.toml", text);
  }

  // tool.call test in `worktree`.
  json test_tool(const std::string& worktree) {
    return daemon_->call("tool.call",
                         {{"tool", "test"}, {"args", json::object()}, {"worktree", worktree}});
  }

  // The real looprctl against this looprd.
  CtlRun ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--socket", daemon_->socket_path()});
    CtlOptions options;
    options.config_dir = daemon_->tree().path("ctl-config");
    options.state_dir = daemon_->tree().path("ctl-state");
    options.env["COLUMNS"] = "200";
    return run_looprctl(args, options);
  }

  // loop.create without a validate of its own: the repository decides.
  Result<json> create_loop_raw() {
    auto client = daemon_->client();
    return client.call("loop.create",
                       {{"type", "code"}, {"task", kSampleTask}, {"repo", repo_.path}});
  }

  TempTree scripts_;
  std::unique_ptr<DaemonHarness> daemon_;
  SampleRepo repo_;
};

std::string stdout_of(const json& reply) {
  return reply.contains("output") && reply["output"].is_object()
             ? reply["output"].value("stdout", std::string())
             : std::string();
}

std::string error_message(const json& reply) {
  return reply.contains("error") && reply["error"].is_object()
             ? reply["error"].value("message", std::string())
             : std::string();
}

TEST_F(RepoSettingsLooprdTest, TheTestToolRunsTheTrustedRepositoryCommandOnly) {
  start("");
  // Untrusted: refused, saying so and what to do.
  json reply = test_tool(repo_.path);
  EXPECT_EQ(reply["status"], "denied") << reply.dump();
  EXPECT_EQ(reply["error"]["code"], "repo_settings_refused") << reply.dump();
  EXPECT_NE(error_message(reply).find("you have not trusted it"), std::string::npos)
      << reply.dump();
  EXPECT_NE(reply["error"]["hint"].get<std::string>().find("looprctl repo trust " + repo_.path),
            std::string::npos)
      << reply.dump();

  CtlRun shown = ctl({"repo", "show", repo_.path});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("untrusted: not honoured until you run `looprctl repo trust"),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("[commands] test         echo daemon-test  (daemon default)"),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("refused: "), std::string::npos) << shown.out;

  // Trusted: the repository's command runs, in the sandbox like any other.
  CtlRun trusted = ctl({"repo", "trust", repo_.path});
  ASSERT_EQ(trusted.exit_code, 0) << trusted.err;
  EXPECT_NE(trusted.out.find("trusted " + repo_.path + "/.loopr/loopr.toml (sha256:"),
            std::string::npos)
      << trusted.out;
  EXPECT_NE(trusted.out.find("[commands] test         echo repo-file-test  (repository file)"),
            std::string::npos)
      << trusted.out;
  EXPECT_NE(trusted.out.find("[worktrees] include     node_modules  (repository file)"),
            std::string::npos)
      << trusted.out;
  EXPECT_NE(trusted.out.find("[commands] build        (none)  (daemon default)"), std::string::npos)
      << trusted.out;
  reply = test_tool(repo_.path);
  EXPECT_EQ(reply["status"], "success") << reply.dump();
  EXPECT_EQ(stdout_of(reply), "repo-file-test\n") << reply.dump();
  // From a subfolder of the checkout too: it belongs to the repository.
  reply = test_tool(repo_.path + "/src");
  EXPECT_EQ(stdout_of(reply), "repo-file-test\n") << reply.dump();

  // Changed since: refused until trusted again.
  write_repo_file(std::string(kRepoFile) + "# a comment is a change too\n");
  reply = test_tool(repo_.path);
  EXPECT_EQ(reply["status"], "denied") << reply.dump();
  EXPECT_NE(error_message(reply).find("changed since you trusted it"), std::string::npos)
      << reply.dump();
  shown = ctl({"repo", "show", repo_.path});
  EXPECT_NE(shown.out.find("changed since you trusted it (trusted sha256:"), std::string::npos)
      << shown.out;
  ASSERT_EQ(ctl({"repo", "trust", repo_.path}).exit_code, 0);
  EXPECT_EQ(stdout_of(test_tool(repo_.path)), "repo-file-test\n");

  // Untrusted again: refused; a repository without a file keeps the daemon's.
  CtlRun untrusted = ctl({"repo", "untrust", repo_.path});
  EXPECT_EQ(untrusted.exit_code, 0) << untrusted.err;
  EXPECT_NE(untrusted.out.find("no longer trusted: " + repo_.path), std::string::npos)
      << untrusted.out;
  EXPECT_EQ(test_tool(repo_.path)["status"], "denied");
  EXPECT_NE(ctl({"repo", "untrust", repo_.path}).out.find("was not trusted"), std::string::npos);

  const std::string other = daemon_->tree().path("work/other");
  make_sample_repo(other);
  EXPECT_EQ(stdout_of(test_tool(other)), "daemon-test\n");
  shown = ctl({"repo", "show", other, "--json"});
  const json other_shown = json::parse(shown.out);
  EXPECT_EQ(other_shown["file"]["state"], "none");
  EXPECT_TRUE(other_shown["refusal"].is_null());
}

TEST_F(RepoSettingsLooprdTest, TrustIsDurableAcrossARestart) {
  start("");
  ASSERT_EQ(ctl({"repo", "trust", repo_.path}).exit_code, 0);
  daemon_->stop();
  daemon_->start();
  EXPECT_EQ(stdout_of(test_tool(repo_.path)), "repo-file-test\n");
}

TEST_F(RepoSettingsLooprdTest, ALoopValidatesWithTheRepositoryCommandOnceTrusted) {
  start("");
  // Untrusted: the loop is refused, saying why (rpc 1003 unauthorized).
  auto refused = create_loop_raw();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("you have not trusted it"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(rpc_error_code(*daemon_, "loop.create",
                           {{"type", "code"}, {"task", kSampleTask}, {"repo", repo_.path}}),
            1003);
  CtlRun run = ctl({"loop", "run", "--repo", repo_.path, "--detach", kSampleTask});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("you have not trusted it"), std::string::npos) << run.err;

  ASSERT_EQ(ctl({"repo", "trust", repo_.path}).exit_code, 0);
  auto created = create_loop_raw();
  ASSERT_TRUE(created.ok()) << created.error().message;
  const json loop = (*created)["loop"];
  EXPECT_EQ(loop["validate"], "sh test.sh");  // the repository's, not [commands] validate
  EXPECT_EQ(loop["repo_settings"]["commands"]["test"], "echo repo-file-test");
  EXPECT_EQ(loop["repo_settings"]["prep"]["include"], json({"node_modules"}));
  EXPECT_EQ(loop["repo_settings"]["prep"]["setup"], "echo setting-up");
  const json done = wait_final(*daemon_, loop["id"]);
  EXPECT_EQ(done["status"], "completed") << done.dump(2);
  EXPECT_EQ(done["last_validation"]["passed"], true) << done.dump(2);
  EXPECT_NE(done["last_validation"]["output"].get<std::string>().find("PASS"), std::string::npos);
}

TEST_F(RepoSettingsLooprdTest, ALoopRunsTheCommandsItWasMadeWithWhateverTheFileBecomes) {
  start("", true, testing_turns());
  ASSERT_EQ(ctl({"repo", "trust", repo_.path}).exit_code, 0);
  auto created = create_loop_raw();
  ASSERT_TRUE(created.ok()) << created.error().message;
  const std::string id = (*created)["loop"]["id"];
  // While its first model turn is under way, the file changes and is no
  // longer trusted: a client's own call is refused now ...
  write_repo_file("[commands]\ntest = \"echo changed\"\nvalidate = \"false\"\n");
  ASSERT_EQ(ctl({"repo", "untrust", repo_.path}).exit_code, 0);
  EXPECT_EQ(test_tool(repo_.path)["status"], "denied");
  // ... but the loop runs what it was made with (LoopSpec, kept in the store).
  const json done = wait_final(*daemon_, id);
  EXPECT_EQ(done["status"], "completed") << done.dump(2);
  bool saw_test = false;
  for (const json& step : steps_of_kind(read_transcript(*daemon_, id), "tool_results")) {
    for (const json& result : step["data"].value("results", json::array())) {
      if (result.value("name", "") != "test") continue;
      saw_test = true;
      EXPECT_EQ(result["status"], "success") << result.dump();
      EXPECT_EQ(stdout_of(result.value("outcome", json::object())), "repo-file-test\n")
          << result.dump();
    }
  }
  EXPECT_TRUE(saw_test);
}

TEST_F(RepoSettingsLooprdTest, LintAfterEditIsTheRepositorysOwn) {
  start("", false);
  write_repo_file(
      "[commands]\nvalidate = \"sh test.sh\"\n"
      "lint = \"echo lint-from-repo-file: {files}; exit 1\"\nlint_files = [\"*.txt\"]\n");
  ASSERT_EQ(ctl({"repo", "trust", repo_.path}).exit_code, 0);
  auto created = create_loop_raw();
  ASSERT_TRUE(created.ok()) << created.error().message;
  const std::string id = (*created)["loop"]["id"];
  EXPECT_EQ(wait_final(*daemon_, id)["status"], "completed");
  std::string edit_result;
  for (const json& step : steps_of_kind(read_transcript(*daemon_, id), "tool_results")) {
    for (const json& result : step["data"].value("results", json::array())) {
      if (result.value("name", "") == "edit_file") edit_result = result.value("content", "");
    }
  }
  EXPECT_NE(edit_result.find("lint (`echo lint-from-repo-file: {files}; exit 1`) reports 1 new "
                             "problem in answer.txt"),
            std::string::npos)
      << edit_result;
  EXPECT_NE(edit_result.find("lint-from-repo-file: answer.txt"), std::string::npos) << edit_result;
}

TEST_F(RepoSettingsLooprdTest, HostileFilesAreRefusedWithAClearError) {
  start("", false);
  struct Case {
    std::string name;
    std::function<void()> make;
    std::string says;
  };
  const std::string outside = daemon_->tree().path("outside");
  daemon_->tree().write("outside/loopr.toml", "[commands]\ntest = \"echo outside\"\n");
  const std::string dot_loopr = repo_.path + "/.loopr";
  const Case cases[] = {
      {"link", [&] { std::filesystem::create_directory_symlink(outside, dot_loopr); },
       ".loopr is a symbolic link"},
      {"file link",
       [&] {
         std::filesystem::create_directories(dot_loopr);
         std::filesystem::create_symlink(outside + "/loopr.toml", dot_loopr + "/loopr.toml");
       },
       "loopr.toml is a symbolic link"},
      {"oversize", [&] { write_repo_file("# " + std::string(70 * 1024, 'x') + "\n"); },
       "over the 65536"},
      {"sandbox", [&] { write_repo_file("[sandbox]\nmode = \"off\"\n"); },
       "sandbox: is not allowed in a repository's .loopr/loopr.toml"},
      {"approval", [&] { write_repo_file("[approval]\ndefault = \"auto\"\n"); },
       "approval: is not allowed in a repository's .loopr/loopr.toml"},
      {"egress", [&] { write_repo_file("[egress]\nallowed_networks = [\"10.0.0.0/8\"]\n"); },
       "egress: is not allowed"},
      {"unknown key", [&] { write_repo_file("[commands]\ntset = \"echo x\"\n"); },
       "commands.tset: unknown key"},
  };
  for (const Case& c : cases) {
    std::filesystem::remove_all(dot_loopr);
    c.make();
    const json reply = test_tool(repo_.path);
    EXPECT_EQ(reply["status"], "denied") << c.name << ": " << reply.dump();
    EXPECT_NE(error_message(reply).find("cannot be used"), std::string::npos) << c.name;
    EXPECT_NE(error_message(reply).find(c.says), std::string::npos)
        << c.name << ": " << reply.dump();
    const CtlRun trusted = ctl({"repo", "trust", repo_.path});
    EXPECT_NE(trusted.exit_code, 0) << c.name;
    EXPECT_NE(trusted.err.find(c.says), std::string::npos) << c.name << ": " << trusted.err;
    const CtlRun shown = ctl({"repo", "show", repo_.path});
    EXPECT_NE(shown.out.find("invalid: "), std::string::npos) << c.name << ": " << shown.out;
    auto created = create_loop_raw();
    ASSERT_FALSE(created.ok()) << c.name;
    EXPECT_NE(created.error().message.find(c.says), std::string::npos)
        << c.name << ": " << created.error().message;
  }
}

TEST_F(RepoSettingsLooprdTest, UserConfigBeatsTheRepositoryFileWhichBeatsTheDaemon) {
  // The user's entry sets test; the file's validate and worktree needs
  // still need trust. (The repository's path is known once looprd has made
  // its tree: the entry is added, then looprd restarted.)
  start("");
  daemon_->stop();
  daemon_->tree().write("config/loopr.toml",
                        daemon_->tree().read("config/loopr.toml") +
                            "\n[[repositories]]\npath = \"" + repo_.path +
                            "\"\n[repositories.commands]\ntest = \"echo user-test\"\n");
  daemon_->start();

  // Untrusted: the user's key decides, so the test tool runs; a loop that
  // would take the file's validate is refused.
  EXPECT_EQ(stdout_of(test_tool(repo_.path)), "user-test\n");
  EXPECT_FALSE(create_loop_raw().ok());

  ASSERT_EQ(ctl({"repo", "trust", repo_.path}).exit_code, 0);
  EXPECT_EQ(stdout_of(test_tool(repo_.path)), "user-test\n");
  const CtlRun shown = ctl({"repo", "show", repo_.path});
  EXPECT_NE(shown.out.find("[commands] test         echo user-test  (user config)"),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("[commands] validate     sh test.sh  (repository file)"),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("[commands] build        (none)  (daemon default)"), std::string::npos)
      << shown.out;
  auto created = create_loop_raw();
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_EQ((*created)["loop"]["repo_settings"]["commands"]["test"], "echo user-test");
  EXPECT_EQ((*created)["loop"]["validate"], "sh test.sh");
  wait_final(*daemon_, (*created)["loop"]["id"]);
}

}  // namespace
}  // namespace loopr::test
