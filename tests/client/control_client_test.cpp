// ControlClient against a scripted FakeDaemon, in process.
#include "client/control_client.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/failure.hpp"
#include "tests/client/fake_daemon.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;
using test::FakeDaemon;
using test::FakeReply;

ExitStatus status_of(const Error& error) {
  return exit_status_for(error);
}

TEST(ControlClient, OpenSendsInitializeFirstWithClientNameAndVersion) {
  FakeDaemon fake;
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client) << client.error().message;
  ASSERT_TRUE(client->call("ping"));

  const auto requests = fake.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "initialize");
  EXPECT_EQ(requests[0].params,
            (json{{"client", "looprctl"}, {"version", proto::kProtocolVersion}}));
  EXPECT_EQ(requests[1].method, "ping");
  ASSERT_TRUE(client->session());
  EXPECT_EQ(client->session()->daemon_version, "fake-1.0");
}

TEST(ControlClient, VersionMismatchErrorNamesBothVersions) {
  FakeDaemon fake;
  fake.on("initialize", [](const proto::Request& request) {
    return FakeReply::error(request, 1004, "looprd speaks protocol 2", {{"protocol", 2}});
  });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, failure::version_mismatch);
  EXPECT_NE(client.error().message.find("version 1"), std::string::npos) << client.error().message;
  EXPECT_NE(client.error().message.find("version 2"), std::string::npos) << client.error().message;
  EXPECT_EQ(status_of(client.error()), ExitStatus::protocol);
}

TEST(ControlClient, AnotherProtocolInTheInitializeResultIsAMismatch) {
  FakeDaemon fake;
  fake.answer("initialize", {{"protocol", 7}, {"daemon_version", "9.0"}, {"capabilities", {}}});
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, failure::version_mismatch);
  EXPECT_NE(client.error().message.find("version 1"), std::string::npos) << client.error().message;
  EXPECT_NE(client.error().message.find("version 7"), std::string::npos) << client.error().message;
}

TEST(ControlClient, MalformedInitializeResultIsAProtocolError) {
  FakeDaemon fake;
  fake.answer("initialize", {{"daemon_version", "9.0"}});
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, errc::protocol);
  EXPECT_EQ(status_of(client.error()), ExitStatus::protocol);
}

TEST(ControlClient, MissingSocketIsUnreachableWithTheStartHint) {
  test::TempTree tree;
  const std::string path = tree.path("none.sock");
  auto client = ControlClient::open(path);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, failure::daemon_unreachable);
  EXPECT_NE(client.error().message.find(path), std::string::npos);
  EXPECT_EQ(client.error().hint, "start it with: looprctl daemon start");
  EXPECT_EQ(status_of(client.error()), ExitStatus::unreachable);
}

TEST(ControlClient, SocketNobodyListensOnIsUnreachable) {
  test::TempTree tree;
  const std::string path = tree.path("stale.sock");
  {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    path.copy(address.sun_path, path.size());
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  }  // closed without listen(): connect() is refused
  auto client = ControlClient::open(path);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, failure::daemon_unreachable);
  EXPECT_NE(client.error().message.find("refused"), std::string::npos) << client.error().message;
}

TEST(ControlClient, EventsArrivingDuringACallAreQueuedInOrder) {
  FakeDaemon fake;
  fake.on("tool.call", [](const proto::Request& request) {
    FakeReply reply = FakeReply::result(request, {{"ok", true}});
    reply.event_first("tool.finished", {{"n", 2}}).event_first("tool.started", {{"n", 1}});
    return reply;
  });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto result = client->call("tool.call", json::object());
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(*result, (json{{"ok", true}}));

  auto first = client->next_event(Milliseconds(0));
  auto second = client->next_event(Milliseconds(0));
  ASSERT_TRUE(first && *first && second && *second);
  EXPECT_EQ((*first)->event, "tool.started");
  EXPECT_EQ((*second)->event, "tool.finished");
  EXPECT_EQ((*second)->data, (json{{"n", 2}}));
}

TEST(ControlClient, NextEventReturnsNothingWhenNoneArrivesInTime) {
  FakeDaemon fake;
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto event = client->next_event(Milliseconds(20));
  ASSERT_TRUE(event) << event.error().message;
  EXPECT_FALSE(*event);
}

TEST(ControlClient, EventQueueIsCappedAndCountsWhatItDropped) {
  constexpr std::size_t kExtra = 10;
  FakeDaemon fake;
  fake.on("tool.call", [](const proto::Request& request) {
    FakeReply reply;
    for (std::size_t i = 0; i < ControlClient::kMaxQueuedEvents + kExtra; ++i) {
      reply.event("tool.output", {{"i", i}});
    }
    reply.bytes += FakeReply::result(request, {{"ok", true}}).bytes;
    return reply;
  });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->call("tool.call"));
  EXPECT_EQ(client->dropped_events(), kExtra);
  auto oldest_kept = client->next_event(Milliseconds(0));
  ASSERT_TRUE(oldest_kept && *oldest_kept);
  EXPECT_EQ((*oldest_kept)->data, (json{{"i", kExtra}}));
}

TEST(ControlClient, RepliesWithAnotherIdAreSkipped) {
  FakeDaemon fake;
  fake.on("ping", [](const proto::Request& request) {
    proto::Request other = request;
    other.id += 100;
    FakeReply reply = FakeReply::result(other, {{"stale", true}});
    reply.bytes += FakeReply::result(request, {{"pong", true}}).bytes;
    return reply;
  });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto pong = client->call("ping");
  ASSERT_TRUE(pong) << pong.error().message;
  EXPECT_EQ(*pong, (json{{"pong", true}}));
}

TEST(ControlClient, ErrorReplyIsAnRpcErrorCarryingTheHint) {
  FakeDaemon fake;
  fake.on("approval.approve", [](const proto::Request& request) {
    return FakeReply::error(request, 1001, "no approval 'a-9' is waiting",
                            {{"code", "not_found"},
                             {"message", "no approval 'a-9' is waiting"},
                             {"hint", "list them with: looprctl approvals"}});
  });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto result = client->call("approval.approve", {{"id", "a-9"}});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, failure::rpc_error);
  EXPECT_EQ(result.error().message, "no approval 'a-9' is waiting");
  EXPECT_EQ(result.error().hint, "list them with: looprctl approvals");
  EXPECT_EQ(result.error().details["rpc_code"], 1001);
  EXPECT_EQ(status_of(result.error()), ExitStatus::call_failed);
}

TEST(ControlClient, UnknownMethodMeansAnotherProtocol) {
  FakeDaemon fake;  // no handler for metrics.get: -32601
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto result = client->call("metrics.get");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, failure::rpc_error);
  EXPECT_EQ(status_of(result.error()), ExitStatus::protocol);
}

TEST(ControlClient, ErrorWithANullIdAnswersTheOutstandingRequest) {
  FakeDaemon fake;
  fake.on("ping", [](const proto::Request&) {
    return FakeReply::raw(R"({"id": null, "error": {"code": -32600, "message": "bad"}})"
                          "\n");
  });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto result = client->call("ping");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, failure::rpc_error);
  EXPECT_EQ(status_of(result.error()), ExitStatus::protocol);
}

TEST(ControlClient, ALineThatIsNotJsonIsAProtocolError) {
  FakeDaemon fake;
  fake.on("ping", [](const proto::Request&) { return FakeReply::raw("pong!\n"); });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto result = client->call("ping");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, errc::protocol);
  EXPECT_EQ(status_of(result.error()), ExitStatus::protocol);
}

TEST(ControlClient, AReplyWithNeitherResultNorErrorIsAProtocolError) {
  FakeDaemon fake;
  fake.on("ping", [](const proto::Request& request) {
    return FakeReply::raw(json{{"id", request.id}}.dump() + "\n");
  });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto result = client->call("ping");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, errc::protocol);
}

TEST(ControlClient, ALineOverTheCapIsAProtocolError) {
  FakeDaemon fake;
  fake.on("ping", [](const proto::Request&) {
    FakeReply reply = FakeReply::raw(std::string(proto::kMaxLineBytes + 4096, 'a'));
    reply.close_connection = true;
    return reply;
  });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto result = client->call("ping");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, errc::protocol);
  EXPECT_NE(result.error().message.find("cap"), std::string::npos) << result.error().message;
}

TEST(ControlClient, ASilentDaemonTimesOutAsUnreachable) {
  FakeDaemon fake;
  fake.on("ping", [](const proto::Request&) { return FakeReply::nothing(); });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto result = client->call("ping", json::object(), Milliseconds(50));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, errc::timeout);
  EXPECT_EQ(status_of(result.error()), ExitStatus::unreachable);
}

TEST(ControlClient, AConnectionClosedBeforeTheReplyIsUnreachable) {
  FakeDaemon fake;
  fake.on("ping", [](const proto::Request&) {
    FakeReply reply;
    reply.close_connection = true;
    return reply;
  });
  fake.start();
  auto client = ControlClient::open(fake.socket_path());
  ASSERT_TRUE(client);
  auto result = client->call("ping");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, failure::daemon_unreachable);
  EXPECT_NE(result.error().message.find("closed the connection"), std::string::npos);
}

}  // namespace
}  // namespace loopr::client
