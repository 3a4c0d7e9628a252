// HttpServer (mcp/http_server.hpp): the Streamable HTTP transport, driven by
// cpp-httplib's client against a session over a fake looprd link.
#include "mcp/http_server.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "tests/mcp_unit/fake_daemon_link.hpp"

namespace loopr::mcp::test {
namespace {

using nlohmann::json;

const std::string kToken = "secret-token-0123456789";

json initialize_request(const json& id = 0) {
  return client_request(id, "initialize",
                        {{"protocolVersion", "2025-11-25"},
                         {"capabilities", json::object()},
                         {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
}

class Http : public ::testing::Test {
 protected:
  void start(std::size_t max_sessions = 8, std::string token = kToken,
             std::optional<std::string> worktree = "/srv/repo") {
    HttpOptions options;
    options.token = std::move(token);
    options.max_sessions = max_sessions;
    options.new_session = [this, worktree] {
      SessionOptions session;
      session.worktree = worktree;
      return std::make_unique<McpSession>(link_, session);
    };
    auto bound = HttpServer::bind(std::move(options));
    ASSERT_TRUE(bound) << bound.error().message;
    server_ = std::move(*bound);
    served_ = std::async(std::launch::async, [this] { return server_->serve(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (served_.valid()) {
      EXPECT_TRUE(served_.get());
    }
  }

  httplib::Client client() const {
    httplib::Client http("127.0.0.1", server_->port());
    http.set_read_timeout(30, 0);
    return http;
  }
  httplib::Headers headers(
      const std::string& session = "",
      const std::string& accept = "application/json, text/event-stream") const {
    httplib::Headers out = {{"Authorization", "Bearer " + kToken}, {"Accept", accept}};
    if (!session.empty()) out.emplace("Mcp-Session-Id", session);
    return out;
  }
  httplib::Result post(const json& message, const httplib::Headers& with) const {
    return client().Post("/mcp", with, message.dump(), "application/json");
  }
  // A new session's id (fails the test without one).
  std::string new_session() {
    auto response = post(initialize_request(), headers());
    EXPECT_TRUE(response);
    if (!response) return "";
    EXPECT_EQ(response->status, 200) << response->body;
    EXPECT_EQ(json::parse(response->body)["result"]["protocolVersion"], "2025-11-25");
    const std::string id = response->get_header_value("Mcp-Session-Id");
    EXPECT_FALSE(id.empty());
    return id;
  }
  int ping(const std::string& session) {
    auto response = post(client_request(1, "ping"), headers(session));
    return response ? response->status : -1;
  }

  FakeDaemonLink link_;
  std::unique_ptr<HttpServer> server_;
  std::future<bool> served_;
};

TEST(HttpBind, RefusesAddressesThatAreNotLoopback) {
  for (const char* host : {"0.0.0.0", "example.com", "::", "192.168.1.10"}) {
    HttpOptions options;
    options.host = host;
    auto bound = HttpServer::bind(std::move(options));
    ASSERT_FALSE(bound) << host;
    EXPECT_EQ(bound.error().code, errc::invalid_arguments);
    EXPECT_NE(bound.error().message.find("loopback"), std::string::npos);
  }
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
}

TEST_F(Http, InitializeStartsASessionNamedInTheHeaderAndItsRequestsNeedIt) {
  start();
  const std::string session = new_session();
  ASSERT_FALSE(session.empty());
  EXPECT_EQ(ping(session), 200);

  auto missing = post(client_request(2, "ping"), headers());
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 400);
  EXPECT_EQ(ping("0123456789abcdef0123456789abcdef"), 404);

  auto notified = post(client_notification("notifications/initialized"), headers(session));
  ASSERT_TRUE(notified);
  EXPECT_EQ(notified->status, 202);
  EXPECT_TRUE(notified->body.empty());
}

TEST_F(Http, DeleteEndsTheSession) {
  start();
  const std::string session = new_session();
  auto deleted = client().Delete("/mcp", headers(session));
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 200);
  EXPECT_EQ(ping(session), 404);
  auto again = client().Delete("/mcp", headers(session));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 404);
  auto unnamed = client().Delete("/mcp", headers());
  ASSERT_TRUE(unnamed);
  EXPECT_EQ(unnamed->status, 400);
  EXPECT_NE(unnamed->body.find("Mcp-Session-Id header missing"), std::string::npos)
      << unnamed->body;
}

TEST_F(Http, GetIsMethodNotAllowed) {
  start();
  const std::string session = new_session();
  auto got = client().Get("/mcp", headers(session, "text/event-stream"));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 405);
}

TEST_F(Http, AForeignHostOrOriginIsForbidden) {
  start();
  const std::string port = std::to_string(server_->port());
  httplib::Headers bad_host = headers();
  bad_host.emplace("Host", "evil.example:" + port);
  auto host = post(initialize_request(), bad_host);
  ASSERT_TRUE(host);
  EXPECT_EQ(host->status, 403);

  httplib::Headers bad_origin = headers();
  bad_origin.emplace("Origin", "http://evil.example");
  auto origin = post(initialize_request(), bad_origin);
  ASSERT_TRUE(origin);
  EXPECT_EQ(origin->status, 403);

  httplib::Headers other_port = headers();
  other_port.emplace("Origin", "http://127.0.0.1:1");
  auto port_origin = post(initialize_request(), other_port);
  ASSERT_TRUE(port_origin);
  EXPECT_EQ(port_origin->status, 403);

  httplib::Headers good_origin = headers();
  good_origin.emplace("Origin", "http://localhost:" + port);
  auto good = post(initialize_request(), good_origin);
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200) << good->body;
}

TEST_F(Http, ARequestWithoutTheTokenIsUnauthorized) {
  start();
  const std::vector<std::string> wrong = {"", "Bearer wrong", "Bearer " + kToken + "x",
                                          "Basic " + kToken};
  for (const std::string& authorization : wrong) {
    httplib::Headers with = {{"Accept", "application/json"}};
    if (!authorization.empty()) with.emplace("Authorization", authorization);
    auto response = post(initialize_request(), with);
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 401) << authorization;
    // RFC 6750 §3: invalid_token only when a bearer token came and was wrong.
    const bool wrong_token = authorization.rfind("Bearer ", 0) == 0;
    EXPECT_EQ(response->get_header_value("WWW-Authenticate"),
              wrong_token ? "Bearer realm=\"loopr mcp\", error=\"invalid_token\""
                          : "Bearer realm=\"loopr mcp\"")
        << authorization;
    EXPECT_TRUE(response->get_header_value("Mcp-Session-Id").empty());
  }
}

TEST_F(Http, ABogusProtocolVersionHeaderIsABadRequest) {
  start();
  const std::string session = new_session();
  httplib::Headers with = headers(session);
  with.emplace("MCP-Protocol-Version", "1999-01-01");
  auto response = post(client_request(1, "ping"), with);
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 400);
  httplib::Headers good = headers(session);
  good.emplace("MCP-Protocol-Version", "2025-06-18");
  auto fine = post(client_request(2, "ping"), good);
  ASSERT_TRUE(fine);
  EXPECT_EQ(fine->status, 200);
}

TEST_F(Http, AToolCallThatAcceptsAnEventStreamIsAnsweredAsSseEndingWithItsResponse) {
  start();
  const std::string session = new_session();
  auto answer = std::async(std::launch::async, [&] {
    return post(client_request(7, "tools/call",
                               {{"name", "run_command"},
                                {"arguments", {{"command", "make"}}},
                                {"_meta", {{"progressToken", 5}}}}),
                headers(session));
  });
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  fake->emit("tool.output", {{"call_id", "c-7"}, {"data", "compiling\n"}});
  fake->finish(
      {{"ok", true}, {"call_id", "c-7"}, {"status", "success"}, {"output", {{"exit_code", 0}}}});
  auto response = answer.get();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->get_header_value("Content-Type").rfind("text/event-stream", 0), 0u)
      << response->get_header_value("Content-Type");
  std::vector<json> events;
  std::size_t at = 0;
  const std::string& body = response->body;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const std::size_t end = body.find('\n', at);
    events.push_back(json::parse(body.substr(at + 6, end - at - 6)));
    at = end;
  }
  ASSERT_EQ(events.size(), 2u) << body;
  EXPECT_EQ(events[0]["method"], "notifications/progress");
  EXPECT_EQ(events[0]["params"]["progressToken"], 5);
  EXPECT_EQ(events[1]["id"], 7);
  EXPECT_EQ(events[1]["result"]["structuredContent"]["exit_code"], 0);
}

TEST_F(Http, AToolCallWithoutAnEventStreamIsAnsweredAsJson) {
  start();
  link_.finish_calls_at_once({{"ok", true}, {"status", "success"}, {"output", {{"n", 1}}}});
  const std::string session = new_session();
  auto response =
      post(client_request(8, "tools/call", {{"name", "read_file"}, {"arguments", {{"path", "a"}}}}),
           headers(session, "application/json"));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(response->body)["result"]["structuredContent"]["n"], 1);
}

TEST_F(Http, AToolCallWithoutAnEventStreamCannotAskForRootsAndSaysSoAtOnce) {
  start(8, kToken, /*worktree=*/std::nullopt);
  auto initialized = post(client_request(0, "initialize",
                                         {{"protocolVersion", "2025-11-25"},
                                          {"capabilities", {{"roots", json::object()}}},
                                          {"clientInfo", {{"name", "test"}, {"version", "1"}}}}),
                          headers());
  ASSERT_TRUE(initialized);
  const std::string session = initialized->get_header_value("Mcp-Session-Id");
  ASSERT_FALSE(session.empty());
  const auto before = std::chrono::steady_clock::now();
  auto response =
      post(client_request(9, "tools/call", {{"name", "read_file"}, {"arguments", {{"path", "a"}}}}),
           headers(session, "application/json"));
  ASSERT_TRUE(response);
  // Answered without waiting for a roots/list answer that could never come
  // (the session waits 10 s for one).
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(5));
  EXPECT_EQ(response->status, 200);
  const json result = json::parse(response->body)["result"];
  EXPECT_EQ(result["isError"], true);
  EXPECT_NE(result.dump().find("text/event-stream"), std::string::npos) << result.dump();
  EXPECT_NE(result.dump().find("--worktree"), std::string::npos) << result.dump();
  EXPECT_EQ(link_.call_count(), 0u);
}

TEST_F(Http, AHostileNestingDepthIsABadRequestAndTheServerGoesOn) {
  start();
  const std::string session = new_session();
  // 200,000 nested arrays as the id: copying that message recursively would
  // overflow the stack of the worker and kill every session.
  const std::string deep =
      "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":" + std::string(200000, '[') +
      std::string(200000, ']') + "}";
  auto response = client().Post("/mcp", headers(session), deep, "application/json");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 400);
  EXPECT_EQ(json::parse(response->body)["error"]["code"], -32700);
  EXPECT_EQ(ping(session), 200);
}

TEST_F(Http, ANewSessionBeyondTheCapEndsTheIdlestIdleOne) {
  start(2);
  const std::string first = new_session();
  const std::string second = new_session();
  EXPECT_EQ(ping(first), 200);  // the second is now the idlest
  const std::string third = new_session();
  ASSERT_FALSE(third.empty());
  EXPECT_EQ(ping(second), 404);
  EXPECT_EQ(ping(first), 200);
  EXPECT_EQ(ping(third), 200);
}

TEST_F(Http, ASessionRunningACallIsNotEvicted) {
  start(1);
  const std::string busy = new_session();
  auto answer = std::async(std::launch::async, [&] {
    return post(
        client_request(1, "tools/call", {{"name", "read_file"}, {"arguments", {{"path", "a"}}}}),
        headers(busy, "application/json"));
  });
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  auto refused = post(initialize_request(), headers());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  fake->finish({{"ok", true}, {"status", "success"}, {"output", {{"n", 1}}}});
  auto response = answer.get();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(ping(busy), 200);
}

TEST_F(Http, StopEndsEverySessionCancellingItsCallsEvenWhileOneStreams) {
  start();
  const std::string session = new_session();
  auto answer = std::async(std::launch::async, [&] {
    return post(client_request(9, "tools/call",
                               {{"name", "run_command"}, {"arguments", {{"command", "make"}}}}),
                headers(session));
  });
  auto fake = link_.wait_for_call(0);
  ASSERT_TRUE(fake);
  server_->stop();
  EXPECT_TRUE(served_.get());  // returns although the call's stream was open
  EXPECT_TRUE(fake->aborted());
  answer.get();  // the stream ended with the server (no response: the call was cancelled)
}

}  // namespace
}  // namespace loopr::mcp::test
