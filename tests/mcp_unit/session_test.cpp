// McpSession (mcp/session.hpp) against a fake looprd link: the lifecycle,
// tools/call on its threads, cancellation, progress, approvals (logged and
// elicited), roots, and close().
#include "mcp/session.hpp"

#include <gtest/gtest.h>

#include <future>
#include <memory>

#include "tests/mcp_unit/fake_daemon_link.hpp"

namespace loopr::mcp::test {
namespace {

using nlohmann::json;

SessionOptions options_with_worktree() {
  SessionOptions options;
  options.worktree = "/srv/repo";
  options.server_version = "9.9.9";
  options.scope = "mcp-test-scope";
  return options;
}

json success(const std::string& call_id = "c-1") {
  return {{"ok", true},       {"call_id", call_id},  {"tool", "read_file"},
          {"lane", "no-net"}, {"status", "success"}, {"output", {{"content", "     1|x\n"}}}};
}

class Session : public ::testing::Test {
 protected:
  void start(SessionOptions options = options_with_worktree(), json capabilities = json::object()) {
    session_ = std::make_unique<McpSession>(link_, std::move(options));
    auto outbox = std::make_shared<RecordingOutbox>();
    session_->handle(client_request(0, "initialize",
                                    {{"protocolVersion", "2025-11-25"},
                                     {"capabilities", std::move(capabilities)},
                                     {"clientInfo", {{"name", "test"}, {"version", "1"}}}}),
                     outbox);
    ASSERT_TRUE(outbox->wait_response_ok(0));
    session_->handle(client_notification("notifications/initialized"),
                     std::make_shared<RecordingOutbox>());
  }
  // A request answered before handle() returns.
  json ask(const json& id, const std::string& method, json params = json::object()) {
    auto outbox = std::make_shared<RecordingOutbox>();
    session_->handle(client_request(id, method, std::move(params)), outbox);
    EXPECT_TRUE(outbox->finished());
    auto messages = outbox->messages();
    return messages.empty() ? json() : messages.back();
  }
  // Starts tools/call `id` of `tool`; its outbox.
  std::shared_ptr<RecordingOutbox> call(const json& id, const std::string& tool = "read_file",
                                        json meta = nullptr) {
    json params = {{"name", tool}, {"arguments", {{"path", "a.txt"}}}};
    if (!meta.is_null()) params["_meta"] = std::move(meta);
    auto outbox = std::make_shared<RecordingOutbox>();
    session_->handle(client_request(id, "tools/call", std::move(params)), outbox);
    return outbox;
  }
  void TearDown() override {
    link_.finish_all_calls();  // changes nothing unless a test failed
    if (session_) session_->close();
  }

  FakeDaemonLink link_;
  std::unique_ptr<McpSession> session_;
};

// ---- lifecycle ----------------------------------------------------------------

TEST_F(Session, InitializeEchoesASupportedVersionAndOffersItsNewestOtherwise) {
  session_ = std::make_unique<McpSession>(link_, options_with_worktree());
  for (const char* version : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    json reply =
        ask(1, "initialize", {{"protocolVersion", version}, {"capabilities", json::object()}});
    EXPECT_EQ(reply["result"]["protocolVersion"], version);
    EXPECT_EQ(session_->protocol_version(), version);
  }
  json reply = ask(2, "initialize", {{"protocolVersion", "2099-01-01"}});
  EXPECT_EQ(reply["id"], 2);
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-11-25");
  EXPECT_TRUE(reply["result"]["capabilities"].contains("tools"));
  EXPECT_TRUE(reply["result"]["capabilities"].contains("logging"));
  EXPECT_EQ(reply["result"]["serverInfo"]["name"], "loopr");
  EXPECT_EQ(reply["result"]["serverInfo"]["version"], "9.9.9");
  EXPECT_FALSE(session_->initialized());
  session_->handle(client_notification("notifications/initialized"),
                   std::make_shared<RecordingOutbox>());
  EXPECT_TRUE(session_->initialized());
}

TEST_F(Session, PingAndSetLevelAnswerEmptyResults) {
  start();
  EXPECT_EQ(ask("p", "ping"), json::parse(R"({"jsonrpc":"2.0","id":"p","result":{}})"));
  EXPECT_EQ(ask(3, "logging/setLevel", {{"level", "debug"}})["result"], json::object());
  json bad = ask(4, "logging/setLevel", {{"level", "loud"}});
  EXPECT_EQ(bad["error"]["code"], rpc_code::invalid_params);
}

TEST_F(Session, AnUnknownMethodIsMethodNotFound) {
  start();
  json reply = ask(5, "resources/list");
  EXPECT_EQ(reply["id"], 5);
  EXPECT_EQ(reply["error"]["code"], rpc_code::method_not_found);
  EXPECT_NE(reply["error"]["message"].get<std::string>().find("resources/list"), std::string::npos);
}

TEST_F(Session, AnInvalidMessageGetsAnInvalidRequestError) {
  start();
  auto outbox = std::make_shared<RecordingOutbox>();
  session_->handle(json::array({client_request(1, "ping")}), outbox);
  ASSERT_EQ(outbox->messages().size(), 1u);
  EXPECT_EQ(outbox->messages()[0]["error"]["code"], rpc_code::invalid_request);
  EXPECT_TRUE(outbox->finished());
}

TEST_F(Session, ToolsListPublishesLooprdsCallableTools) {
  start();
  json reply = ask(6, "tools/list");
  ASSERT_EQ(reply["result"]["tools"].size(), 3u) << reply.dump();
  EXPECT_EQ(reply["result"]["tools"][0]["name"], "read_file");
  EXPECT_EQ(link_.requests_of("tool.list").size(), 1u);
}

// ---- tools/call -----------------------------------------------------------------

TEST_F(Session, ACallGoesToToolCallWithTheWorktreeAndTheSessionsScope) {
  start();
  link_.finish_calls_at_once(success());
  auto outbox = call(7);
  auto response = outbox->wait_for_response(7);
  ASSERT_TRUE(response);
  EXPECT_EQ((*response)["result"]["isError"], false);
  EXPECT_EQ((*response)["result"]["structuredContent"]["content"], "     1|x\n");
  EXPECT_TRUE(outbox->wait_finished());
  auto sent = link_.requests_of("tool.call");
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0], json({{"tool", "read_file"},
                           {"args", {{"path", "a.txt"}}},
                           {"worktree", "/srv/repo"},
                           {"session", "mcp-test-scope"}}));
}

TEST_F(Session, AnUnknownToolIsInvalidParamsAndNeverReachesLooprd) {
  start();
  auto outbox = call(8, "complete_task");
  auto response = outbox->wait_for_response(8);
  ASSERT_TRUE(response);
  EXPECT_EQ((*response)["error"]["code"], rpc_code::invalid_params);
  EXPECT_NE((*response)["error"]["message"].get<std::string>().find("complete_task"),
            std::string::npos);
  EXPECT_NE((*response)["error"]["data"]["hint"].get<std::string>().find("read_file"),
            std::string::npos);
  EXPECT_TRUE(outbox->wait_finished());
  EXPECT_EQ(link_.call_count(), 0u);
}

TEST_F(Session, MalformedCallParamsAreInvalidParams) {
  start();
  auto outbox = std::make_shared<RecordingOutbox>();
  session_->handle(client_request(9, "tools/call", {{"name", "read_file"}, {"arguments", "x"}}),
                   outbox);
  auto response = outbox->wait_for_response(9);
  ASSERT_TRUE(response);
  EXPECT_EQ((*response)["error"]["code"], rpc_code::invalid_params);
  EXPECT_EQ(link_.call_count(), 0u);
}

TEST_F(Session, AFailedCallIsAnErrorResultNotAProtocolError) {
  start();
  link_.finish_calls_at_once({{"ok", false},
                              {"tool", "read_file"},
                              {"status", "failed"},
                              {"error", {{"code", "not_found"}, {"message", "no a.txt"}}}});
  auto response = call(10)->wait_for_response(10);
  ASSERT_TRUE(response);
  EXPECT_FALSE(response->contains("error"));
  EXPECT_EQ((*response)["result"]["isError"], true);
  EXPECT_NE((*response)["result"]["content"][0]["text"].get<std::string>().find("no a.txt"),
            std::string::npos);
}

TEST_F(Session, CallsBeyondTheInFlightCapAreRefused) {
  SessionOptions options = options_with_worktree();
  options.max_calls_in_flight = 2;
  start(options);
  auto first = call(1);
  auto second = call(2);
  ASSERT_TRUE(link_.wait_for_call(1));
  EXPECT_EQ(session_->calls_in_flight(), 2u);
  auto third = call(3);
  ASSERT_TRUE(third->finished());  // refused before handle() returned
  ASSERT_EQ(third->messages().size(), 1u);
  EXPECT_EQ(third->messages()[0]["id"], 3);
  EXPECT_EQ(third->messages()[0]["error"]["code"], rpc_code::internal_error);
  EXPECT_NE(third->messages()[0]["error"]["message"].get<std::string>().find("at most 2"),
            std::string::npos);
  EXPECT_EQ(link_.call_count(), 2u);
  link_.wait_for_call(0)->finish(success());
  link_.wait_for_call(1)->finish(success());
  EXPECT_TRUE(first->wait_finished());
  EXPECT_TRUE(second->wait_finished());
}

// A client that got a call's response may call again at once: the answered
// call no longer counts against the cap.
TEST_F(Session, AnAnsweredCallNoLongerCountsAgainstTheCap) {
  SessionOptions options = options_with_worktree();
  options.max_calls_in_flight = 1;
  start(options);
  auto first = call(1);
  std::shared_ptr<RecordingOutbox> next;
  // The next call is made the moment the first one's response is sent, on
  // the thread that sends it.
  first->on_send([&](const json& message) {
    if (message.contains("result")) next = call(2);
  });
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  fake->finish(success());
  ASSERT_TRUE(first->wait_finished());
  ASSERT_TRUE(next);
  ASSERT_TRUE(next->messages().empty()) << next->messages()[0].dump();
  auto second = link_.wait_for_call(1);
  ASSERT_TRUE(second);
  second->finish(success());
  auto response = next->wait_for_response(2);
  ASSERT_TRUE(response);
  EXPECT_EQ((*response)["result"]["isError"], false);
}

// ---- cancellation -----------------------------------------------------------------

TEST_F(Session, CancellingBeforeLooprdNamedTheCallAbortsItsConnectionAndSendsNoResponse) {
  start();
  auto outbox = call("c");
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  session_->handle(
      client_notification("notifications/cancelled", {{"requestId", "c"}, {"reason", "user"}}),
      std::make_shared<RecordingOutbox>());
  EXPECT_TRUE(fake->wait_aborted());
  EXPECT_TRUE(outbox->wait_finished());
  EXPECT_TRUE(outbox->messages().empty()) << outbox->messages()[0].dump();
  EXPECT_TRUE(link_.requests_of("tool.cancel").empty());
}

TEST_F(Session, CancellingANamedCallAsksLooprdToCancelItAndSendsNoResponse) {
  start();
  auto outbox = call(11);
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  // Output names the call (the link does not subscribe to tool.started).
  fake->emit("tool.output", {{"call_id", "call-42"}, {"stream", "stdout"}, {"data", "x\n"}});
  session_->handle(client_notification("notifications/cancelled", {{"requestId", 11}}),
                   std::make_shared<RecordingOutbox>());
  EXPECT_TRUE(outbox->wait_finished());
  auto cancels = link_.requests_of("tool.cancel");
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0], json({{"call_id", "call-42"}}));
  EXPECT_FALSE(fake->aborted());  // looprd ended it; the connection stays usable
  EXPECT_TRUE(outbox->messages().empty()) << outbox->messages()[0].dump();
}

TEST_F(Session, ACancellationOfAnotherRequestIdChangesNothing) {
  start();
  auto outbox = call(12);
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  session_->handle(client_notification("notifications/cancelled", {{"requestId", "12"}}),
                   std::make_shared<RecordingOutbox>());
  fake->finish(success());
  EXPECT_TRUE(outbox->wait_response_ok(12));
  EXPECT_FALSE(fake->aborted());
}

// ---- progress --------------------------------------------------------------------

TEST_F(Session, OutputBecomesProgressWithStrictlyIncreasingValuesWhenTheClientSentAToken) {
  start();
  auto outbox = call(13, "run_command", {{"progressToken", "tok"}});
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  fake->emit("tool.output", {{"call_id", "c-13"}, {"stream", "stdout"}, {"data", "one\n"}});
  fake->emit("tool.output", {{"call_id", "someone-else"}, {"data", "not mine\n"}});
  fake->emit("tool.output", {{"call_id", "c-13"}, {"stream", "stdout"}, {"data", "two\n"}});
  fake->emit("tool.output", {{"call_id", "c-13"}, {"stream", "stderr"}, {"data", "three\n"}});
  fake->finish(success("c-13"));
  ASSERT_TRUE(outbox->wait_finished());
  auto progress = outbox->with_method("notifications/progress");
  ASSERT_EQ(progress.size(), 3u);
  std::vector<std::string> texts;
  double last = 0;
  for (const json& message : progress) {
    EXPECT_EQ(message["params"]["progressToken"], "tok");
    const double value = message["params"]["progress"].get<double>();
    EXPECT_GT(value, last);
    last = value;
    texts.push_back(message["params"]["message"]);
  }
  EXPECT_EQ(texts, (std::vector<std::string>{"one\n", "two\n", "three\n"}));
  // The response comes after its progress.
  EXPECT_TRUE(outbox->messages().back().contains("result"));
}

TEST_F(Session, NoProgressWithoutAToken) {
  start();
  auto outbox = call(14, "run_command");
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  fake->emit("tool.output", {{"call_id", "c-14"}, {"data", "one\n"}});
  fake->finish(success("c-14"));
  ASSERT_TRUE(outbox->wait_finished());
  EXPECT_TRUE(outbox->with_method("notifications/progress").empty());
  EXPECT_EQ(outbox->messages().size(), 1u);
}

// ---- approvals ---------------------------------------------------------------------

json approval_event() {
  return {{"id", "ap-7"},
          {"call_id", "c-20"},
          {"tool", "run_command"},
          {"lane", "net"},
          {"tier", "privileged"},
          {"worktree", "/srv/repo"},
          {"args", {{"command", "make"}}}};
}

TEST_F(Session, AWaitingApprovalIsLoggedAsAWarningNamingLooprctlApprove) {
  start();
  auto outbox = call(20, "run_command");
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  fake->emit("approval.requested", approval_event());
  auto logged = outbox->with_method("notifications/message");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0]["params"]["level"], "warning");
  EXPECT_NE(logged[0]["params"]["data"].get<std::string>().find("looprctl approve ap-7"),
            std::string::npos)
      << logged[0].dump();
  EXPECT_TRUE(outbox->with_method("elicitation/create").empty());  // not asked for
  fake->finish(success("c-20"));
  EXPECT_TRUE(outbox->wait_finished());
}

TEST_F(Session, SetLevelErrorSilencesTheApprovalWarning) {
  start();
  ASSERT_EQ(ask(1, "logging/setLevel", {{"level", "error"}})["result"], json::object());
  auto outbox = call(21, "run_command");
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  fake->emit("approval.requested", approval_event());
  fake->finish(success("c-20"));
  ASSERT_TRUE(outbox->wait_finished());
  EXPECT_TRUE(outbox->with_method("notifications/message").empty());
}

// The elicitation says why the call waits: the approval rule that asked
// (issue 27), as looprctl approvals and the TUI say it.
TEST_F(Session, TheElicitationSaysWhichRuleMadeTheCallWait) {
  SessionOptions options = options_with_worktree();
  options.elicit_approvals = true;
  start(options, {{"elicitation", json::object()}});
  auto outbox = call(31, "run_command");
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  json approval = approval_event();
  approval["rule"] = {{"decision", "ask"},
                      {"command", {"git", "push"}},
                      {"reason", "pushes are reviewed"},
                      {"file", "/home/ada/.config/loopr/loopr.toml"},
                      {"line", 12}};
  fake->emit("approval.requested", approval);
  auto asked = outbox->wait_for_request("elicitation/create");
  ASSERT_TRUE(asked);
  const std::string message = (*asked)["params"]["message"];
  EXPECT_NE(message.find("It waits by the rule at /home/ada/.config/loopr/loopr.toml:12 (ask "
                         "[\"git\",\"push\"]): pushes are reviewed."),
            std::string::npos)
      << message;
}

struct ElicitationCase {
  const char* name;
  json answer;                  // the client's result
  const char* expected_method;  // approval.approve, approval.deny, or "" (nothing)
};

class Elicitation : public Session, public ::testing::WithParamInterface<ElicitationCase> {};

TEST_P(Elicitation, TheClientsAnswerDecidesTheApproval) {
  SessionOptions options = options_with_worktree();
  options.elicit_approvals = true;
  start(options, {{"elicitation", json::object()}});
  auto outbox = call(30, "run_command");
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  fake->emit("approval.requested", approval_event());
  auto asked = outbox->wait_for_request("elicitation/create");
  ASSERT_TRUE(asked);
  const json& params = (*asked)["params"];
  EXPECT_NE(params["message"].get<std::string>().find("run_command"), std::string::npos);
  EXPECT_EQ(params["requestedSchema"]["properties"]["approve"]["type"], "boolean");
  EXPECT_EQ(params["mode"], "form");

  session_->handle({{"jsonrpc", "2.0"}, {"id", (*asked)["id"]}, {"result", GetParam().answer}},
                   std::make_shared<RecordingOutbox>());
  const std::string expected = GetParam().expected_method;
  auto approvals = link_.requests_of("approval.approve");
  auto denials = link_.requests_of("approval.deny");
  if (expected == "approval.approve") {
    ASSERT_EQ(approvals.size(), 1u);
    EXPECT_EQ(approvals[0]["id"], "ap-7");
    EXPECT_TRUE(denials.empty());
  } else if (expected == "approval.deny") {
    ASSERT_EQ(denials.size(), 1u);
    EXPECT_EQ(denials[0]["id"], "ap-7");
    EXPECT_TRUE(approvals.empty());
  } else {
    EXPECT_TRUE(approvals.empty());
    EXPECT_TRUE(denials.empty());
  }
  fake->finish(success("c-20"));
  EXPECT_TRUE(outbox->wait_finished());
}

INSTANTIATE_TEST_SUITE_P(
    Answers, Elicitation,
    ::testing::Values(ElicitationCase{"AcceptTrue",
                                      {{"action", "accept"}, {"content", {{"approve", true}}}},
                                      "approval.approve"},
                      ElicitationCase{"AcceptFalse",
                                      {{"action", "accept"}, {"content", {{"approve", false}}}},
                                      "approval.deny"},
                      ElicitationCase{"Decline", {{"action", "decline"}}, "approval.deny"},
                      ElicitationCase{"Cancel", {{"action", "cancel"}}, ""},
                      // Malformed answers from the client never approve, and never throw.
                      ElicitationCase{"AcceptWithAStringApprove",
                                      {{"action", "accept"}, {"content", {{"approve", "yes"}}}},
                                      "approval.deny"},
                      ElicitationCase{"AcceptWithContentNotAnObject",
                                      {{"action", "accept"}, {"content", "approve"}},
                                      "approval.deny"}),
    [](const auto& test_case) { return std::string(test_case.param.name); });

TEST_F(Session, NoElicitationWhenTheClientDidNotDeclareIt) {
  SessionOptions options = options_with_worktree();
  options.elicit_approvals = true;
  start(options);
  auto outbox = call(31, "run_command");
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  fake->emit("approval.requested", approval_event());
  EXPECT_TRUE(outbox->with_method("elicitation/create").empty());
  EXPECT_EQ(outbox->with_method("notifications/message").size(), 1u);
  fake->finish(success("c-20"));
  EXPECT_TRUE(outbox->wait_finished());
}

// ---- roots ------------------------------------------------------------------------

class Roots : public Session {
 protected:
  void SetUp() override {
    SessionOptions options = options_with_worktree();
    options.worktree.reset();
    start(options, {{"roots", {{"listChanged", true}}}});
  }
  // Makes tools/call `id`, answers the roots/list it causes with `answer`
  // (a result, or {"error": ...}); the call's outbox.
  std::shared_ptr<RecordingOutbox> call_answering_roots(const json& id, const json& answer) {
    auto outbox = call(id);
    auto asked = outbox->wait_for_request("roots/list");
    EXPECT_TRUE(asked);
    if (!asked) return outbox;
    json response = {{"jsonrpc", "2.0"}, {"id", (*asked)["id"]}};
    response.update(answer);
    session_->handle(response, std::make_shared<RecordingOutbox>());
    return outbox;
  }
  std::string worktree_of_call(std::size_t n) {
    auto fake = link_.wait_for_call(n);
    if (!fake) return "(no call)";
    fake->finish(success());
    return fake->params().value("worktree", "");
  }
};

json roots_result(const std::string& uri) {
  return {{"result", {{"roots", json::array({{{"uri", uri}, {"name", "r"}}})}}}};
}

TEST_F(Roots, TheFirstFileRootIsTheWorktreeDecoded) {
  auto outbox = call_answering_roots(1, roots_result("file:///a%20b"));
  EXPECT_EQ(worktree_of_call(0), "/a b");
  EXPECT_TRUE(outbox->wait_finished());
  // Asked once: the next call uses the same root.
  auto again = call(2);
  EXPECT_EQ(worktree_of_call(1), "/a b");
  EXPECT_TRUE(again->wait_finished());
  EXPECT_TRUE(again->with_method("roots/list").empty());
}

TEST_F(Roots, LocalhostIsThisHost) {
  call_answering_roots(1, roots_result("file://localhost/x"));
  EXPECT_EQ(worktree_of_call(0), "/x");
}

TEST_F(Roots, ARootThatIsNotAFileUriIsAnErrorResult) {
  auto outbox = call_answering_roots(1, roots_result("https://example.com/repo"));
  auto response = outbox->wait_for_response(1);
  ASSERT_TRUE(response);
  EXPECT_EQ((*response)["result"]["isError"], true);
  EXPECT_NE((*response)["result"]["content"][0]["text"].get<std::string>().find("file://"),
            std::string::npos);
  EXPECT_EQ(link_.call_count(), 0u);
}

TEST_F(Roots, TheClientsErrorIsAnErrorResult) {
  auto outbox =
      call_answering_roots(1, {{"error", {{"code", -32601}, {"message", "no roots here"}}}});
  auto response = outbox->wait_for_response(1);
  ASSERT_TRUE(response);
  EXPECT_EQ((*response)["result"]["isError"], true);
  EXPECT_NE((*response)["result"]["content"][0]["text"].get<std::string>().find("no roots here"),
            std::string::npos);
  EXPECT_EQ(link_.call_count(), 0u);
}

TEST_F(Roots, ListChangedMakesTheNextCallAskAgain) {
  call_answering_roots(1, roots_result("file:///first"));
  EXPECT_EQ(worktree_of_call(0), "/first");
  session_->handle(client_notification("notifications/roots/list_changed"),
                   std::make_shared<RecordingOutbox>());
  call_answering_roots(2, roots_result("file:///second"));
  EXPECT_EQ(worktree_of_call(1), "/second");
}

// ---- close ------------------------------------------------------------------------

TEST_F(Session, CloseCancelsRunningCallsAndJoinsTheirThreads) {
  start();
  auto unnamed = call(1);
  auto first = link_.wait_for_call(0);
  ASSERT_TRUE(first);
  auto named = call(2);
  auto second = link_.wait_for_call(1);
  ASSERT_TRUE(second);
  second->emit("tool.output", {{"call_id", "c-named"}, {"data", "working\n"}});
  auto closing = std::async(std::launch::async, [&] { session_->close(); });
  EXPECT_TRUE(first->wait_aborted());
  EXPECT_TRUE(link_.wait_for_request("tool.cancel"));
  link_.finish_all_calls();  // changes nothing unless close() did not end them
  closing.get();             // close() returns only once both threads ended
  EXPECT_EQ(session_->calls_in_flight(), 0u);
  EXPECT_TRUE(unnamed->finished());
  EXPECT_TRUE(named->finished());
  EXPECT_TRUE(first->aborted());
  auto cancels = link_.requests_of("tool.cancel");
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0]["call_id"], "c-named");
  // A closed session starts no call.
  auto late = call(3);
  ASSERT_TRUE(late->finished());
  EXPECT_EQ(late->messages()[0]["error"]["code"], rpc_code::internal_error);
  EXPECT_EQ(link_.call_count(), 2u);
}

}  // namespace
}  // namespace loopr::mcp::test
