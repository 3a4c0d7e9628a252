// The memory tools over a real Store in a temporary state folder: notes are
// ranked by FTS5's bm25 with the matched words marked in the snippet; a
// user sees only their own notes and, from a repository, that repository's
// and their own; update and delete show in the next search; bounds refuse
// clearly; the model's conversation turns of a repository can be searched.
#include "memory/notebook.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/temp_tree.hpp"

namespace loopr::memory {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::size_t kOutputCap = 50000;

class NotebookTest : public ::testing::Test {
 protected:
  NotebookTest() : store_(store::Store::open(tree_.path("state"))), notebook_(store_, limits_) {}

  Caller caller(std::int64_t uid = 1000, std::string repo = "/src/app") {
    return Caller{uid, std::move(repo), "loop:l1"};
  }
  json call(const std::string& tool, const json& args, const Caller& who) {
    auto result = notebook_.call(tool, args, who, kOutputCap);
    EXPECT_TRUE(result.ok()) << tool << ": " << (result.ok() ? "" : result.error().message);
    return result.ok() ? *result : json();
  }
  Error failure(const std::string& tool, const json& args, const Caller& who) {
    auto result = notebook_.call(tool, args, who, kOutputCap);
    EXPECT_FALSE(result.ok()) << tool << " succeeded: " << (result.ok() ? result->dump() : "");
    return result.ok() ? Error{} : result.error();
  }
  std::string save(const std::string& content, const Caller& who, json extra = json::object()) {
    extra["content"] = content;
    return call("memory_save", extra, who).value("note_id", "");
  }
  // The note ids memory_search returns, best first.
  std::vector<std::string> search(const std::string& query, const Caller& who,
                                  json extra = json::object()) {
    extra["query"] = query;
    std::vector<std::string> ids;
    const json found = call("memory_search", extra, who);
    for (const json& hit : found["results"])
      ids.push_back(hit["note_id"].is_null() ? hit["source"].get<std::string>()
                                             : hit["note_id"].get<std::string>());
    return ids;
  }

  test::TempTree tree_;
  config::MemorySettings limits_;
  store::Store store_;
  Notebook notebook_;
};

TEST_F(NotebookTest, SaveGivesANoteIdAndSearchFindsItWithTheWordsMarked) {
  const json saved = call("memory_save",
                          {{"content",
                            "The build needs `make -j2`; the linker runs out of memory "
                            "with more jobs."},
                           {"tags", {"build", "make"}}},
                          caller());
  const std::string id = saved["note_id"];
  EXPECT_THAT(id, ::testing::MatchesRegex(
                      "note-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
  EXPECT_THAT(saved["message"].get<std::string>(), HasSubstr("this repository"));
  const json found = call("memory_search", {{"query", "linker memory"}}, caller());
  ASSERT_EQ(found["results"].size(), 1u);
  const json& hit = found["results"][0];
  EXPECT_EQ(hit["note_id"], id);
  EXPECT_THAT(hit["text"].get<std::string>(), StartsWith("The build needs"));
  EXPECT_THAT(hit["snippet"].get<std::string>(), HasSubstr("**linker**"));
  EXPECT_THAT(hit["snippet"].get<std::string>(), HasSubstr("**memory**"));
  EXPECT_GT(hit["score"].get<double>(), 0);
  EXPECT_EQ(hit["source"], "loop:l1");
  EXPECT_EQ(hit["scope"], "repo");
  EXPECT_THAT(hit["updated_at"].get<std::string>(),
              ::testing::MatchesRegex("20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z"));
  EXPECT_EQ(hit["tags"], json({"build", "make"}));
  // Tags are searched too.
  EXPECT_EQ(search("make", caller()), std::vector<std::string>{id});
}

TEST_F(NotebookTest, BetterMatchesRankFirst) {
  const std::string one = save("postgres runs on port 5433 in the dev setup", caller());
  const std::string all = save(
      "postgres port 5433: the dev database; postgres needs the port "
      "forwarded",
      caller());
  const std::string none = save("the frontend uses vite", caller());
  const std::vector<std::string> ids = search("postgres port forwarded", caller());
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], all);
  EXPECT_EQ(ids[1], one);
  EXPECT_EQ(search("vite", caller()), std::vector<std::string>{none});
  // top_k bounds the answer.
  EXPECT_EQ(search("postgres", caller(), {{"top_k", 1}}).size(), 1u);
}

TEST_F(NotebookTest, HostileQueriesAreSearchedAsWords) {
  const std::string id = save("NEAR the OR gate: a \"quoted\" (parenthesised) note", caller());
  for (const std::string& query :
       {std::string("NEAR(gate quoted, 1)"), std::string("\"quoted"), std::string("(((gate"),
        std::string("content:gate"), std::string("gate*"), std::string("NOT gate"),
        std::string("gate\0NUL", 8), std::string("gate\xff\xfe\x80"),
        std::string(1024 * 1024, '(') + " gate"}) {
    auto result = notebook_.call("memory_search", {{"query", query}}, caller(), kOutputCap);
    ASSERT_TRUE(result.ok()) << query.substr(0, 40) << ": " << result.error().message;
    ASSERT_EQ((*result)["results"].size(), 1u) << query.substr(0, 40);
    EXPECT_EQ((*result)["results"][0]["note_id"], id);
  }
  const json nothing = call("memory_search", {{"query", "(((\"*^:"}}, caller());
  EXPECT_TRUE(nothing["results"].empty());
  EXPECT_THAT(nothing["message"].get<std::string>(), HasSubstr("no words"));
}

TEST_F(NotebookTest, AUserNeverSeesAnotherUsersNotes) {
  const std::string mine = save("secret deploy key lives in vault path ops/deploy", caller(1000));
  const Caller other = caller(1001);
  EXPECT_TRUE(search("deploy vault", other).empty());
  EXPECT_TRUE(search("deploy vault", other, {{"scope", "user"}}).empty());
  EXPECT_EQ(failure("memory_update", {{"note_id", mine}, {"content", "mine now"}}, other).code,
            errc::not_found);
  EXPECT_EQ(failure("memory_delete", {{"note_id", mine}}, other).code, errc::not_found);
  EXPECT_EQ(notebook_.show(1001, mine).error().code, errc::not_found);
  EXPECT_EQ(notebook_.remove(1001, mine).error().code, errc::not_found);
  EXPECT_TRUE((*notebook_.list(1001, std::nullopt, 100))["notes"].empty());
  // Untouched for its owner.
  EXPECT_EQ(search("deploy vault", caller(1000)), std::vector<std::string>{mine});
  EXPECT_EQ((*notebook_.show(1000, mine))["text"],
            "secret deploy key lives in vault path ops/deploy");
}

TEST_F(NotebookTest, RepositoryNotesStayInTheirRepositoryAndUserNotesGoEverywhere) {
  const Caller app = caller(1000, "/src/app");
  const Caller lib = caller(1000, "/src/lib");
  const std::string app_note = save("tests run with pytest -x", app);
  const std::string user_note =
      save("the user prefers pytest over unittest", app, {{"scope", "user"}});
  const std::string lib_note = save("lib tests run with pytest --forked", lib);
  EXPECT_EQ(search("pytest", app).size(), 2u);
  EXPECT_THAT(search("pytest", app), ::testing::UnorderedElementsAre(app_note, user_note));
  EXPECT_THAT(search("pytest", lib), ::testing::UnorderedElementsAre(lib_note, user_note));
  // scope user: the user's own notes only, never another repository's.
  EXPECT_THAT(search("pytest", lib, {{"scope", "user"}}), ::testing::ElementsAre(user_note));
  // Another repository's note cannot be changed from here, the user's own can.
  EXPECT_EQ(failure("memory_delete", {{"note_id", app_note}}, lib).code, errc::not_found);
  call("memory_update", {{"note_id", user_note}, {"content", "the user prefers pytest -q"}}, lib);
  const json shown = *notebook_.show(1000, user_note);
  EXPECT_EQ(shown["scope"], "user");
  EXPECT_EQ(shown["text"], "the user prefers pytest -q");
  EXPECT_EQ((*notebook_.show(1000, app_note))["repo"], "/src/app");
}

TEST_F(NotebookTest, UpdateAndDeleteShowInTheNextSearch) {
  const std::string id = save("cache lives in /var/cache/app", caller(), {{"tags", {"cache"}}});
  const json updated =
      call("memory_update", {{"note_id", id}, {"content", "cache moved to /srv/cache"}}, caller());
  EXPECT_EQ(updated["note_id"], id);
  EXPECT_TRUE(search("var", caller()).empty());  // the old words are gone from the index
  EXPECT_EQ(search("srv", caller()), std::vector<std::string>{id});
  EXPECT_EQ(search("cache", caller()), std::vector<std::string>{id});  // tags kept
  call("memory_update",
       {{"note_id", id},
        {"content", "cache moved to /srv/cache"},
        {"tags", json::array({"storage"})}},
       caller());
  EXPECT_EQ(search("storage", caller()), std::vector<std::string>{id});
  const json deleted = call("memory_delete", {{"note_id", id}}, caller());
  EXPECT_TRUE(deleted["deleted"].get<bool>());
  EXPECT_TRUE(search("srv cache storage", caller()).empty());  // no ghost in the index
  EXPECT_TRUE(search("srv cache storage", caller(), {{"scope", "user"}}).empty());
  EXPECT_EQ(failure("memory_delete", {{"note_id", id}}, caller()).code, errc::not_found);
  EXPECT_EQ(failure("memory_update", {{"note_id", id}, {"content", "x"}}, caller()).code,
            errc::not_found);
}

TEST_F(NotebookTest, NotesOutliveTheStoreObject) {
  const std::string id = save("kept across restarts", caller());
  store::Store reopened = store::Store::open(tree_.path("state"));
  Notebook again(reopened, limits_);
  auto found = again.call("memory_search", {{"query", "restarts"}}, caller(), kOutputCap);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ((*found)["results"].size(), 1u);
  EXPECT_EQ((*found)["results"][0]["note_id"], id);
}

TEST_F(NotebookTest, BoundsRefuseWithWhatToDo) {
  limits_.max_note_bytes = 100;
  limits_.max_notes = 2;
  const Error big = failure("memory_save", {{"content", std::string(101, 'x')}}, caller());
  EXPECT_EQ(big.code, errc::too_large);
  EXPECT_THAT(big.message, HasSubstr("max_note_bytes"));
  EXPECT_FALSE(big.hint.empty());
  save("one", caller());
  save("two", caller());
  const Error full = failure("memory_save", {{"content", "three"}}, caller());
  EXPECT_EQ(full.code, errc::too_large);
  EXPECT_THAT(full.message, HasSubstr("max_notes"));
  EXPECT_THAT(full.hint, HasSubstr("memory_delete"));
  // The cap is per repository and for the user's own notes.
  save("three", caller(1000, "/src/other"));
  save("mine", caller(), {{"scope", "user"}});
  const Error tag = failure("memory_save", {{"content", "x"}, {"tags", {std::string(65, 't')}}},
                            caller(1000, "/src/third"));
  EXPECT_EQ(tag.code, errc::invalid_arguments);
  const std::string id = save("short", caller(1000, "/src/third"));
  EXPECT_EQ(failure("memory_update", {{"note_id", id}, {"content", std::string(101, 'y')}},
                    caller(1000, "/src/third"))
                .code,
            errc::too_large);
}

TEST_F(NotebookTest, ASearchAnswerFitsTheToolsOutputCap) {
  limits_.max_note_bytes = 16384;
  for (int i = 0; i < 20; ++i)
    save("needle " + std::string(16000, static_cast<char>('a' + i % 26)), caller());
  auto result =
      notebook_.call("memory_search", {{"query", "needle"}, {"top_k", 20}}, caller(), kOutputCap);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ((*result)["results"].size(), 20u);
  EXPECT_LE(result->dump().size(), kOutputCap);
  EXPECT_TRUE((*result)["results"][0].value("text_truncated", false));
}

TEST_F(NotebookTest, EscapesAndASmallCapStillFitTheCap) {
  limits_.max_note_bytes = 16384;
  // Quotes and control characters take 2 to 6 bytes each once escaped.
  for (int i = 0; i < 20; ++i)
    save("needle " + std::string(8000, '"') + std::string(4000, '\x01'), caller());
  for (const std::size_t cap : {kOutputCap, std::size_t{4096}}) {
    auto result =
        notebook_.call("memory_search", {{"query", "needle"}, {"top_k", 20}}, caller(), cap);
    ASSERT_TRUE(result.ok());
    EXPECT_LE(result->dump().size(), cap) << cap;
    EXPECT_FALSE((*result)["results"].empty()) << cap;
  }
  auto small =
      notebook_.call("memory_search", {{"query", "needle"}, {"top_k", 20}}, caller(), 4096);
  EXPECT_THAT((*small)["message"].get<std::string>(), HasSubstr("left out"));
}

TEST_F(NotebookTest, ConversationTurnsOfTheRepositoryCanBeSearched) {
  store::LoopRow row;
  row.id = "l-app";
  row.seq = 1;
  row.type = "code";
  row.status = "running";
  row.spec = {{"repo", "/src/app"}};
  ASSERT_TRUE(store_.insert_loop(row).ok());
  row.id = "l-lib";
  row.seq = 2;
  row.spec = {{"repo", "/src/lib"}};
  ASSERT_TRUE(store_.insert_loop(row).ok());
  auto turn = [](const std::string& text) {
    return json{{"sequence", 1}, {"turn", {{"text", text}, {"tool_calls", json::array()}}}};
  };
  ASSERT_TRUE(store_
                  .append_loop_step({0, "l-app", 1, "model_turn",
                                     turn("The flaky test is tests/test_clock.py: it sleeps."), 0})
                  .ok());
  ASSERT_TRUE(
      store_.append_loop_step({0, "l-lib", 1, "model_turn", turn("flaky in lib too"), 0}).ok());
  save("clock tests need freezegun", caller());
  // Without include_conversation only notes; with it, this repository's turns.
  EXPECT_TRUE(search("flaky", caller()).empty());
  const json found =
      call("memory_search", {{"query", "flaky clock"}, {"include_conversation", true}}, caller());
  ASSERT_EQ(found["results"].size(), 2u);
  std::vector<std::string> sources;
  for (const json& hit : found["results"])
    sources.push_back(hit["source"]);
  EXPECT_THAT(sources, ::testing::UnorderedElementsAre("loop:l1", "conversation:l-app"));
  for (const json& hit : found["results"]) {
    if (hit["source"] == "conversation:l-app") {
      EXPECT_TRUE(hit["note_id"].is_null());
      EXPECT_EQ(hit["loop_id"], "l-app");
      EXPECT_THAT(hit["snippet"].get<std::string>(), HasSubstr("**flaky**"));
    }
  }
}

}  // namespace
}  // namespace loopr::memory
