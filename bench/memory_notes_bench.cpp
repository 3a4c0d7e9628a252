// Memory notes: what memory_save and memory_search cost in the Notebook over
// a real Store (SQLite WAL + FTS5) as the number of notes grows, without
// looprd around them (its per-call cost is daemon_load_bench's). Notes are
// 200-600 bytes of words from a 5,000-word vocabulary; queries are three
// words. Run by hand (bench/README.md), never as a timed test:
//   build/bin/memory_notes_bench [--notes 1000,10000] [--queries 2000] [--dir /tmp]
// Prints p50/p90/p99 in microseconds per operation, and the database size.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/sample_stats.hpp"
#include "memory/notebook.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

std::vector<std::size_t> parse_sizes(const std::string& text) {
  std::vector<std::size_t> sizes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    sizes.push_back(static_cast<std::size_t>(std::stoul(item)));
  return sizes;
}

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

void report(const char* what, std::size_t notes, std::vector<double> samples) {
  const auto s = loopr::bench::stats_of(std::move(samples));
  std::printf("%-26s notes=%-7zu n=%-6zu p50=%8.1f us  p90=%8.1f us  p99=%8.1f us\n", what, notes,
              s.n, s.p50, s.p90, s.p99);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes = {1000, 10000};
  std::size_t queries = 2000;
  std::string dir = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--notes") sizes = parse_sizes(argv[i + 1]);
    if (flag == "--queries") queries = std::stoul(argv[i + 1]);
    if (flag == "--dir") dir = argv[i + 1];
  }
  std::mt19937 random(1);
  std::vector<std::string> vocabulary;
  for (int i = 0; i < 5000; ++i)
    vocabulary.push_back("w" + std::to_string(i * 7919 % 100003));
  auto words = [&](std::size_t count) {
    std::string text;
    for (std::size_t i = 0; i < count; ++i)
      text += vocabulary[random() % vocabulary.size()] + " ";
    return text;
  };

  for (const std::size_t notes : sizes) {
    const std::string state =
        dir + "/memory-bench-" + std::to_string(::getpid()) + "-" + std::to_string(notes);
    std::filesystem::remove_all(state);
    {
      loopr::store::Store store = loopr::store::Store::open(state);
      loopr::config::MemorySettings limits;
      limits.max_notes = static_cast<std::int64_t>(notes) + 1;
      loopr::memory::Notebook notebook(store, limits);
      const loopr::memory::Caller caller{1000, "/src/app", "bench"};
      std::vector<double> saves;
      for (std::size_t i = 0; i < notes; ++i) {
        const auto start = Clock::now();
        auto saved =
            notebook.call("memory_save", {{"content", words(40 + random() % 80)}}, caller, 10000);
        saves.push_back(micros_since(start));
        if (!saved) {
          std::fprintf(stderr, "save failed: %s\n", saved.error().message.c_str());
          return 1;
        }
      }
      report("memory_save", notes, saves);
      std::vector<double> searches;
      std::size_t hits = 0;
      for (std::size_t i = 0; i < queries; ++i) {
        const auto start = Clock::now();
        auto found =
            notebook.call("memory_search", {{"query", words(3)}, {"top_k", 5}}, caller, 50000);
        searches.push_back(micros_since(start));
        if (found) hits += (*found)["results"].size();
      }
      report("memory_search (3 words)", notes, searches);
      std::printf("%-26s notes=%-7zu %.2f results a query on average\n", "", notes,
                  static_cast<double>(hits) / static_cast<double>(queries));
    }
    struct stat st {};
    ::stat((state + "/loopr.db").c_str(), &st);
    std::printf("%-26s notes=%-7zu loopr.db %.1f MB\n", "database", notes,
                static_cast<double>(st.st_size) / 1e6);
    std::filesystem::remove_all(state);
  }
  return 0;
}
