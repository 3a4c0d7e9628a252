#include "llm/scripted_provider.hpp"

#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include "tests/support/temp_tree.hpp"

namespace loopr::llm {
namespace {

using nlohmann::json;

Result<ModelTurn> run_complete(Provider& provider, const ModelRequest& request,
                               const TurnCallbacks& callbacks, asio::io_context& io) {
  std::optional<Result<ModelTurn>> out;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        out.emplace(co_await provider.complete(request, callbacks));
      },
      asio::detached);
  io.run();
  io.restart();
  EXPECT_TRUE(out.has_value());
  if (!out) return make_error("test", "never finished");
  return std::move(*out);
}

ModelRequest request_number(std::uint64_t sequence) {
  ModelRequest request;
  request.system = "sys";
  request.messages = {{Role::user, "task", {}, {}}};
  request.sequence = sequence;
  return request;
}

class ScriptedProviderTest : public ::testing::Test {
 protected:
  std::unique_ptr<ScriptedProvider> open(const std::string& text, ScriptedOptions options = {}) {
    tree_.write("session.jsonl", text);
    auto provider = ScriptedProvider::open(tree_.path("session.jsonl"), options);
    EXPECT_TRUE(provider) << provider.error().message;
    if (!provider) return nullptr;
    return std::move(*provider);
  }
  Error open_error(const std::string& text) {
    tree_.write("bad.jsonl", text);
    auto provider = ScriptedProvider::open(tree_.path("bad.jsonl"));
    EXPECT_FALSE(provider);
    if (provider) return make_error("test", "opened");
    return provider.error();
  }

  test::TempTree tree_;
  asio::io_context io_;
};

const std::string kSession =
    R"({"text":"I will look.","tool_calls":[{"id":"c1","name":"read_file","arguments":{"path":"a"}}],"usage":{"input_tokens":5,"output_tokens":6}})"
    "\n\n"
    R"({"text":"Done.","model":"claude-recorded"})"
    "\n";

TEST_F(ScriptedProviderTest, AnswersTurnNumberSequence) {
  auto provider = open(kSession);
  ASSERT_TRUE(provider);
  EXPECT_EQ(provider->turns(), 2U);
  EXPECT_EQ(provider->model(), "scripted");
  EXPECT_EQ(provider->context_window(), 200000);

  auto first = run_complete(*provider, request_number(0), {}, io_);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->text, "I will look.");
  ASSERT_EQ(first->tool_calls.size(), 1U);
  EXPECT_EQ(first->tool_calls[0], (ToolCall{"c1", "read_file", R"({"path":"a"})"}));
  EXPECT_EQ(first->stop_reason, StopReason::tool_use);
  EXPECT_EQ(first->usage, (Usage{5, 6, 0, 0}));
  EXPECT_EQ(first->model, "scripted");

  auto second = run_complete(*provider, request_number(1), {}, io_);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->text, "Done.");
  EXPECT_EQ(second->model, "claude-recorded");

  // A resumed loop asks again for the same turn and gets the same answer.
  auto again = run_complete(*provider, request_number(0), {}, io_);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *first);
}

TEST_F(ScriptedProviderTest, LinesKeyedByLoopAnswerThatLoopAndTheRestAnswerOthers) {
  auto provider = open(R"({"text":"shared 0"})"
                       "\n"
                       R"({"text":"p1 turn 0","loop":"p1"})"
                       "\n"
                       R"({"text":"p1-s1 turn 0","loop":"p1-s1"})"
                       "\n"
                       R"({"text":"p1 turn 1","loop":"p1"})"
                       "\n");
  ASSERT_TRUE(provider);
  auto ask = [&](const std::string& loop, std::uint64_t sequence) {
    ModelRequest request = request_number(sequence);
    request.conversation = loop;
    auto turn = run_complete(*provider, request, {}, io_);
    return turn ? turn->text : "error: " + turn.error().message;
  };
  EXPECT_EQ(ask("p1", 0), "p1 turn 0");
  EXPECT_EQ(ask("p1", 1), "p1 turn 1");
  EXPECT_EQ(ask("p1-s1", 0), "p1-s1 turn 0");
  EXPECT_EQ(ask("c7", 0), "shared 0");
  EXPECT_EQ(ask("", 0), "shared 0");
  const std::string past = ask("p1-s1", 1);
  EXPECT_NE(past.find("for loop p1-s1"), std::string::npos) << past;
  EXPECT_NE(open_error(R"({"text":"x","loop":""})").message.find("\"loop\""), std::string::npos);
}

TEST_F(ScriptedProviderTest, PastTheEndIsAProviderRequestError) {
  auto provider = open(kSession);
  ASSERT_TRUE(provider);
  auto past = run_complete(*provider, request_number(2), {}, io_);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code, errc::provider_request);
  EXPECT_NE(past.error().message.find("has 2 turns; turn 3 was asked for"), std::string::npos);
  EXPECT_NE(past.error().message.find("session.jsonl"), std::string::npos);
  EXPECT_FALSE(past.error().hint.empty());
}

TEST_F(ScriptedProviderTest, UsageEstimateWhenNotRecorded) {
  auto provider = open(kSession);
  ASSERT_TRUE(provider);
  ModelRequest request = request_number(1);
  auto turn = run_complete(*provider, request, {}, io_);
  ASSERT_TRUE(turn);
  json whole = {{"system", request.system},
                {"messages", json::array({to_json(request.messages[0])})},
                {"tools", json::array()}};
  auto bytes = static_cast<std::int64_t>(whole.dump().size());
  EXPECT_EQ(turn->usage.input_tokens, (bytes + 3) / 4);
  EXPECT_EQ(turn->usage.output_tokens, 2);  // "Done." is 5 bytes
  EXPECT_EQ(turn->usage, estimate_usage(request, *turn));
}

TEST_F(ScriptedProviderTest, StreamedTextArrivesInPieces) {
  auto provider = open(R"({"text":"h\u00e9llo w\u00f6rld, streamed"})");
  ASSERT_TRUE(provider);
  std::vector<std::string> pieces;
  TurnCallbacks callbacks;
  callbacks.on_text = [&](std::string_view text) { pieces.emplace_back(text); };
  auto turn = run_complete(*provider, request_number(0), callbacks, io_);
  ASSERT_TRUE(turn);
  EXPECT_GT(pieces.size(), 1U);
  std::string joined;
  for (const auto& piece : pieces) {
    joined += piece;
    EXPECT_TRUE(json::accept(json(piece).dump()));  // each piece whole UTF-8
    EXPECT_NE(static_cast<unsigned char>(piece.front()) & 0xC0, 0x80);
  }
  EXPECT_EQ(joined, turn->text);
}

TEST_F(ScriptedProviderTest, UnstreamedTextArrivesOnce) {
  auto provider = open(R"({"text":"all at once please"})", ScriptedOptions{false, 1000, ""});
  ASSERT_TRUE(provider);
  EXPECT_EQ(provider->context_window(), 1000);
  std::vector<std::string> pieces;
  TurnCallbacks callbacks;
  callbacks.on_text = [&](std::string_view text) { pieces.emplace_back(text); };
  ASSERT_TRUE(run_complete(*provider, request_number(0), callbacks, io_));
  EXPECT_EQ(pieces, std::vector<std::string>{"all at once please"});
}

TEST_F(ScriptedProviderTest, ErrorLineAnswersWithThatError) {
  auto provider = open(
      R"({"error":{"code":"provider_unavailable","message":"HTTP 529 overloaded","hint":"wait"}})"
      "\n"
      R"({"text":"ok"})");
  ASSERT_TRUE(provider);
  auto failed = run_complete(*provider, request_number(0), {}, io_);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, errc::provider_unavailable);
  EXPECT_EQ(failed.error().message, "HTTP 529 overloaded");
  EXPECT_EQ(failed.error().hint, "wait");
  EXPECT_TRUE(run_complete(*provider, request_number(1), {}, io_));
}

TEST_F(ScriptedProviderTest, DelayIsWaitedAndCancellable) {
  auto provider = open(R"({"text":"slow","delay_ms":20})"
                       "\n"
                       R"({"text":"slower","delay_ms":600000})");
  ASSERT_TRUE(provider);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(run_complete(*provider, request_number(0), {}, io_));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));

  CancelToken token;
  TurnCallbacks callbacks;
  callbacks.cancel = &token;
  asio::post(io_, [&] { token.cancel(); });
  auto cancelled = run_complete(*provider, request_number(1), callbacks, io_);
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().code, errc::cancelled);

  // Already cancelled: no answer at all.
  auto before = run_complete(*provider, request_number(0), callbacks, io_);
  ASSERT_FALSE(before);
  EXPECT_EQ(before.error().code, errc::cancelled);
}

TEST_F(ScriptedProviderTest, BadLinesNameFileLineAndField) {
  Error not_json = open_error("{\"text\":\"a\"}\n\n{oops\n");
  EXPECT_EQ(not_json.code, "invalid_arguments");
  EXPECT_NE(not_json.message.find("bad.jsonl:3: not valid JSON"), std::string::npos);

  Error field = open_error(R"({"tool_calls":[{"id":"a"}]})");
  EXPECT_NE(field.message.find("bad.jsonl:1:"), std::string::npos);
  EXPECT_NE(field.message.find("\"name\""), std::string::npos);

  Error unknown = open_error(R"({"txt":"typo"})");
  EXPECT_NE(unknown.message.find("unknown key \"txt\""), std::string::npos);

  Error delay = open_error(R"({"delay_ms":-5})");
  EXPECT_NE(delay.message.find("delay_ms"), std::string::npos);

  Error error = open_error(R"({"error":{"code":"x"}})");
  EXPECT_NE(error.message.find("\"error\""), std::string::npos);

  EXPECT_NE(open_error("[1,2]").message.find("not a JSON object"), std::string::npos);
}

TEST_F(ScriptedProviderTest, MissingFileIsAnIoError) {
  auto provider = ScriptedProvider::open(tree_.path("absent.jsonl"));
  ASSERT_FALSE(provider);
  EXPECT_EQ(provider.error().code, "io");
  EXPECT_NE(provider.error().message.find("absent.jsonl"), std::string::npos);
}

TEST_F(ScriptedProviderTest, CrlfLinesAndEmptyFile) {
  auto crlf = open("{\"text\":\"a\"}\r\n{\"text\":\"b\"}\r\n");
  ASSERT_TRUE(crlf);
  EXPECT_EQ(crlf->turns(), 2U);
  auto empty = open("");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->turns(), 0U);
  auto past = run_complete(*empty, request_number(0), {}, io_);
  ASSERT_FALSE(past);
  EXPECT_NE(past.error().message.find("has 0 turns; turn 1 was asked for"), std::string::npos);
}

TEST_F(ScriptedProviderTest, ExportedTurnsReplayExactly) {
  ModelTurn recorded{"text",
                     {{"id1", "edit_file", R"({"x": [1, 2]})"}},
                     StopReason::tool_use,
                     "claude-x",
                     {1, 2, 3, 4}};
  auto provider = open(to_json(recorded).dump() + "\n");
  ASSERT_TRUE(provider);
  auto turn = run_complete(*provider, request_number(0), {}, io_);
  ASSERT_TRUE(turn);
  EXPECT_EQ(*turn, recorded);
}

}  // namespace
}  // namespace loopr::llm
