#include "proto/control_messages.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "proto/line_codec.hpp"

namespace loopr::proto {
namespace {

using nlohmann::json;

int rpc_code(const Error& error) {
  return error.details.value("rpc_code", 0);
}

TEST(ControlRequest, ParsesAndDefaultsParams) {
  auto r = parse_request(json{{"id", 7}, {"method", "ping"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->id, 7);
  EXPECT_EQ(r->method, "ping");
  EXPECT_EQ(r->params, json::object());
  const Request full{-3, "tool.call", {{"tool", "grep"}}};
  EXPECT_EQ(*parse_request(to_json(full)), full);
  EXPECT_EQ(to_json(full),
            json::parse(R"({"id":-3,"method":"tool.call","params":{"tool":"grep"}})"));
}

TEST(ControlRequest, RefusesNonObjectWithoutId) {
  const auto r = parse_request(json::array({1}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(rpc_code(r.error()), -32600);
  const Response reply = error_reply(r.error());
  EXPECT_FALSE(reply.id.has_value());
  EXPECT_EQ(to_json(reply)["id"], nullptr);
  EXPECT_EQ(to_json(reply)["error"]["code"], -32600);
}

TEST(ControlRequest, RefusesMissingOrBadId) {
  for (const json& request :
       {json{{"method", "ping"}}, json{{"id", "7"}, {"method", "ping"}},
        json{{"id", 1.5}, {"method", "ping"}}, json{{"id", nullptr}, {"method", "ping"}},
        json{{"id", std::numeric_limits<std::uint64_t>::max()}, {"method", "ping"}}}) {
    const auto r = parse_request(request);
    ASSERT_FALSE(r.ok()) << request.dump();
    EXPECT_EQ(rpc_code(r.error()), -32600);
    EXPECT_FALSE(r.error().details.contains("id"));
  }
}

TEST(ControlRequest, EchoesTheIdWhenMethodOrParamsAreBad) {
  for (const json& request :
       {json{{"id", 9}}, json{{"id", 9}, {"method", 3}}, json{{"id", 9}, {"method", ""}},
        json{{"id", 9}, {"method", "ping"}, {"params", json::array()}},
        json{{"id", 9}, {"method", "ping"}, {"params", "x"}}}) {
    const auto r = parse_request(request);
    ASSERT_FALSE(r.ok()) << request.dump();
    const Response reply = error_reply(r.error());
    EXPECT_EQ(reply.id, 9);
    ASSERT_TRUE(reply.is_error());
    EXPECT_EQ(std::get<ControlError>(reply.body).code, -32600);
    EXPECT_EQ(to_json(reply)["id"], 9);
  }
}

TEST(ControlRequest, ParseErrorFromTheLineReaderBecomesMinus32700) {
  LineReader reader;
  reader.feed("{oops\n");
  const auto r = reader.next();
  ASSERT_FALSE(r.ok());
  const Response reply = error_reply(r.error());
  EXPECT_EQ(std::get<ControlError>(reply.body).code,
            static_cast<int>(ControlErrorCode::parse_error));
  EXPECT_FALSE(reply.id.has_value());
}

TEST(ControlError, FromOrdinaryErrors) {
  const ControlError bad_args = control_error_from(make_error(errc::invalid_arguments, "no path"));
  EXPECT_EQ(bad_args.code, -32602);
  EXPECT_EQ(bad_args.message, "no path");
  EXPECT_EQ(bad_args.data["code"], "invalid_arguments");
  EXPECT_EQ(control_error_from(make_error(errc::io, "disk")).code, -32603);
  Error loop = make_error(errc::not_found, "no loop 12");
  loop.details = {{"rpc_code", 1001}};
  EXPECT_EQ(control_error_from(loop).code, 1001);
  EXPECT_FALSE(control_error_from(loop).data.contains("details"));
  loop.details["loop_id"] = "l-12";
  EXPECT_EQ(control_error_from(loop).data["details"], (json{{"loop_id", "l-12"}}));
}

TEST(ControlResponse, WireFormat) {
  EXPECT_EQ(to_json(Response::success(4, {{"pong", true}})),
            json::parse(R"({"id":4,"result":{"pong":true}})"));
  EXPECT_EQ(to_json(Response::failure(5, ControlError{1002, "loop is paused", nullptr})),
            json::parse(R"({"id":5,"error":{"code":1002,"message":"loop is paused"}})"));
  EXPECT_EQ(to_json(Event{"tool.finished", {{"job", "j"}}}),
            json::parse(R"({"event":"tool.finished","data":{"job":"j"}})"));
}

TEST(ServerMessage, ParsesResponsesAndEvents) {
  const std::vector<std::variant<Response, Event>> all = {
      Response::success(1, {{"x", 1}}), Response::success(2, json::array({1, 2})),
      Response::failure(3, ControlError{-32601, "no such method", {{"method", "nope"}}}),
      Response::failure(std::nullopt, ControlError{-32700, "parse error", nullptr}),
      Event{"loop.updated", {{"id", "l1"}}}};
  for (const auto& message : all) {
    const json wire = std::visit([](const auto& m) { return to_json(m); }, message);
    auto parsed = parse_server_message(wire);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(*parsed, message) << wire.dump();
  }
}

TEST(ServerMessage, RefusesMalformedMessages) {
  for (const json& bad :
       {json::array(), json{{"id", 1}}, json{{"id", 1}, {"result", 1}, {"error", {}}},
        json{{"id", "1"}, {"result", 1}}, json{{"id", 1}, {"error", {{"code", "x"}}}},
        json{{"id", 1}, {"error", {{"code", 1}}}}, json{{"id", 1}, {"error", "boom"}},
        json{{"data", {}}}, json{{"event", 5}}, json{{"event", ""}}}) {
    const auto r = parse_server_message(bad);
    EXPECT_FALSE(r.ok()) << bad.dump();
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, errc::protocol);
    }
  }
}

TEST(ControlParams, InitializeRoundTripsAndRefusesBadFields) {
  const InitializeParams params{"looprctl", kProtocolVersion};
  EXPECT_EQ(*parse_initialize_params(to_json(params)), params);
  const auto bad = parse_initialize_params(json{{"client", "x"}, {"version", "1"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(rpc_code(bad.error()), -32602);
  EXPECT_EQ(bad.error().details["field"], "version");
  EXPECT_NE(bad.error().message.find("initialize"), std::string::npos);
  EXPECT_FALSE(parse_initialize_params(json::array()).ok());

  const InitializeResult result{1, "0.1.0", {{"events", true}}};
  EXPECT_EQ(*parse_initialize_result(to_json(result)), result);
  EXPECT_FALSE(parse_initialize_result(json{{"protocol", 1}}).ok());
}

TEST(ControlParams, ToolCall) {
  const ToolCallParams full{"read_file", {{"path", "a"}}, "/w", "loop-1", 5000, "mcp-7"};
  EXPECT_EQ(*parse_tool_call_params(to_json(full)), full);
  EXPECT_EQ(to_json(full)["session"], "mcp-7");
  const auto minimal = parse_tool_call_params(json{{"tool", "glob"}, {"worktree", "/w"}});
  ASSERT_TRUE(minimal.ok());
  EXPECT_EQ(minimal->args, json::object());
  EXPECT_FALSE(minimal->loop_id.has_value());
  EXPECT_FALSE(minimal->timeout_ms.has_value());
  EXPECT_FALSE(minimal->session.has_value());
  for (const json& bad :
       {json{{"worktree", "/w"}}, json{{"tool", "t"}}, json{{"tool", "t"}, {"worktree", 1}},
        json{{"tool", "t"}, {"worktree", "/w"}, {"args", json::array()}},
        json{{"tool", "t"}, {"worktree", "/w"}, {"timeout_ms", -1}},
        json{{"tool", "t"}, {"worktree", "/w"}, {"loop_id", 3}},
        json{{"tool", "t"}, {"worktree", "/w"}, {"session", std::string(129, 's')}}}) {
    const auto r = parse_tool_call_params(bad);
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_EQ(control_error_from(r.error()).code, -32602);
  }
}

TEST(ControlParams, ApprovalDecisionAndSubscribe) {
  const ApprovalDecisionParams deny{"a-1", "too risky"};
  EXPECT_EQ(*parse_approval_decision_params(to_json(deny)), deny);
  EXPECT_FALSE(parse_approval_decision_params(json::object()).ok());
  EXPECT_FALSE(parse_approval_decision_params(json{{"id", "a"}, {"reason", 1}}).ok());

  const SubscribeParams some{{"tool.output", "loop.updated"}, std::nullopt, false};
  EXPECT_EQ(*parse_subscribe_params(to_json(some)), some);
  EXPECT_FALSE(to_json(some).contains("own_calls"));
  const SubscribeParams own{{"tool"}, std::nullopt, true};
  EXPECT_EQ(*parse_subscribe_params(to_json(own)), own);
  EXPECT_FALSE(parse_subscribe_params(json{{"own_calls", "yes"}}).ok());
  const SubscribeParams one_loop{{"loop"}, "c7", false};
  EXPECT_EQ(*parse_subscribe_params(to_json(one_loop)), one_loop);
  EXPECT_FALSE(parse_subscribe_params(json{{"loop_id", 7}}).ok());
  EXPECT_TRUE(parse_subscribe_params(json::object())->topics.empty());
  EXPECT_FALSE(parse_subscribe_params(json{{"topics", "all"}}).ok());
  EXPECT_FALSE(parse_subscribe_params(json{{"topics", {1}}}).ok());
}

}  // namespace
}  // namespace loopr::proto
