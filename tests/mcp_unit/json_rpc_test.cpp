// mcp/json_rpc.hpp: what classify() makes of each kind of message, and
// encode() on text that is not UTF-8.
#include "mcp/json_rpc.hpp"

#include <gtest/gtest.h>

namespace loopr::mcp {
namespace {

using nlohmann::json;

TEST(JsonRpcClassify, ARequestKeepsItsIdMethodAndParams) {
  const Message message =
      classify({{"jsonrpc", "2.0"}, {"id", 7}, {"method", "tools/list"}, {"params", {{"a", 1}}}});
  EXPECT_EQ(message.kind, MessageKind::request);
  EXPECT_EQ(message.id, 7);
  EXPECT_EQ(message.method, "tools/list");
  EXPECT_EQ(message.params, json({{"a", 1}}));

  const Message text_id = classify({{"jsonrpc", "2.0"}, {"id", "abc"}, {"method", "ping"}});
  EXPECT_EQ(text_id.kind, MessageKind::request);
  EXPECT_EQ(text_id.id, "abc");
  EXPECT_TRUE(text_id.params.is_null());  // absent params
}

TEST(JsonRpcClassify, AMessageWithoutAnIdIsANotification) {
  const Message message =
      classify({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}, {"params", nullptr}});
  EXPECT_EQ(message.kind, MessageKind::notification);
  EXPECT_EQ(message.method, "notifications/initialized");
  EXPECT_TRUE(message.params.is_null());
}

TEST(JsonRpcClassify, ResultsAndErrorsAreResponses) {
  const Message result = classify({{"jsonrpc", "2.0"}, {"id", "loopr-1"}, {"result", {{"x", 1}}}});
  EXPECT_EQ(result.kind, MessageKind::response);
  EXPECT_EQ(result.id, "loopr-1");
  EXPECT_EQ(result.result, json({{"x", 1}}));

  const Message error =
      classify({{"jsonrpc", "2.0"}, {"id", 3}, {"error", {{"code", -32601}, {"message", "no"}}}});
  EXPECT_EQ(error.kind, MessageKind::response);
  EXPECT_EQ(error.error["code"], -32601);

  const Message both =
      classify({{"jsonrpc", "2.0"}, {"id", 3}, {"result", 1}, {"error", {{"code", 1}}}});
  EXPECT_EQ(both.kind, MessageKind::invalid);
  EXPECT_EQ(both.id, 3);  // still tied to its request
  const Message error_not_object = classify({{"jsonrpc", "2.0"}, {"id", 3}, {"error", "bad"}});
  EXPECT_EQ(error_not_object.kind, MessageKind::invalid);
}

TEST(JsonRpcClassify, ABatchIsRefusedSayingWhy) {
  const Message message =
      classify(json::array({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}}));
  EXPECT_EQ(message.kind, MessageKind::invalid);
  EXPECT_TRUE(message.id.is_null());
  EXPECT_NE(message.problem.find("batches"), std::string::npos) << message.problem;
}

TEST(JsonRpcClassify, NotAnObjectIsInvalid) {
  EXPECT_EQ(classify(json("ping")).kind, MessageKind::invalid);
  EXPECT_EQ(classify(json(5)).kind, MessageKind::invalid);
}

TEST(JsonRpcClassify, AMissingOrWrongJsonrpcIsInvalidButKeepsAValidId) {
  const Message missing = classify({{"id", 4}, {"method", "ping"}});
  EXPECT_EQ(missing.kind, MessageKind::invalid);
  EXPECT_EQ(missing.id, 4);
  EXPECT_NE(missing.problem.find("jsonrpc"), std::string::npos);
  const Message wrong = classify({{"jsonrpc", "1.0"}, {"id", 4}, {"method", "ping"}});
  EXPECT_EQ(wrong.kind, MessageKind::invalid);
}

TEST(JsonRpcClassify, ParamsThatAreNotAnObjectAreInvalid) {
  const Message array =
      classify({{"jsonrpc", "2.0"}, {"id", 9}, {"method", "x"}, {"params", {1, 2}}});
  EXPECT_EQ(array.kind, MessageKind::invalid);
  EXPECT_EQ(array.id, 9);
  EXPECT_NE(array.problem.find("params"), std::string::npos);
  const Message number = classify({{"jsonrpc", "2.0"}, {"method", "x"}, {"params", 3}});
  EXPECT_EQ(number.kind, MessageKind::invalid);
  const Message no_method = classify({{"jsonrpc", "2.0"}, {"id", 1}, {"method", ""}});
  EXPECT_EQ(no_method.kind, MessageKind::invalid);
}

TEST(JsonRpcClassify, ARequestIdMustBeAStringOrAnInteger) {
  for (const json& id : {json(nullptr), json(1.5), json(true), json::object(), json::array()}) {
    const Message message = classify({{"jsonrpc", "2.0"}, {"id", id}, {"method", "ping"}});
    EXPECT_EQ(message.kind, MessageKind::invalid) << id.dump();
    EXPECT_TRUE(message.id.is_null()) << id.dump();  // never echoed back
  }
}

TEST(JsonRpcEncode, TextThatIsNotUtf8BecomesReplacementCharactersWithoutThrowing) {
  const json message = notification("notifications/message", {{"data", std::string("a\xff\xfe"
                                                                                   "b")}});
  std::string line;
  ASSERT_NO_THROW(line = encode(message));
  EXPECT_NE(line.find("a\xEF\xBF\xBD"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(json::parse(line)["params"]["data"].get<std::string>().back(), 'b');
}

TEST(JsonRpcBuild, ResponsesAndIdKeys) {
  EXPECT_EQ(result_response(1, {{"a", 1}}),
            json::parse(R"({"jsonrpc":"2.0","id":1,"result":{"a":1}})"));
  const json error = error_response("x", -32602, "bad", {{"hint", "h"}});
  EXPECT_EQ(error["error"]["code"], -32602);
  EXPECT_EQ(error["error"]["data"]["hint"], "h");
  EXPECT_FALSE(error_response(1, -1, "m").at("error").contains("data"));
  EXPECT_NE(id_key(json(1)), id_key(json("1")));
  EXPECT_EQ(id_key(json("a")), id_key(json("a")));
}

}  // namespace
}  // namespace loopr::mcp
