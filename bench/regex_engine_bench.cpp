// PCRE2 (JIT) vs RE2 on the loop grep runs: find the next match in a large
// buffer, count its line, resume at the next line. The corpus is the text
// files under /usr/include (or $LOOPR_BENCH_CORPUS), concatenated in path
// order up to 64 MiB, so every machine builds the same buffer from its own
// headers. Run: build/bin/regex_engine_bench (bench/README.md has the flags)
#define PCRE2_CODE_UNIT_WIDTH 8
#include <benchmark/benchmark.h>
#include <pcre2.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifdef LOOPR_HAVE_RE2
#include <re2/re2.h>
#endif

namespace {

constexpr std::size_t kCorpusBytes = 64u << 20;

const std::string& corpus() {
  static const std::string text = [] {
    const char* env = std::getenv("LOOPR_BENCH_CORPUS");
    const std::string root = env != nullptr && *env ? env : "/usr/include";
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && !it->is_symlink(ec)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    std::string all;
    for (const auto& file : files) {
      std::ifstream in(file, std::ios::binary);
      std::ostringstream buffer;
      buffer << in.rdbuf();
      const std::string content = buffer.str();
      if (content.find('\0') != std::string::npos) continue;
      all += content;
      if (all.size() >= kCorpusBytes) break;
    }
    all.resize(std::min(all.size(), kCorpusBytes));
    return all;
  }();
  return text;
}

std::size_t next_line(const std::string& text, std::size_t pos) {
  const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
  return nl == nullptr ? text.size()
                       : static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) + 1;
}

void pcre2_lines(benchmark::State& state, const char* pattern, bool caseless, bool jit) {
  const std::string& text = corpus();
  int error = 0;
  PCRE2_SIZE offset = 0;
  std::uint32_t options = PCRE2_MULTILINE | (caseless ? PCRE2_CASELESS : 0u);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                                   options, &error, &offset, nullptr);
  if (code == nullptr) {
    state.SkipWithError("compile failed");
    return;
  }
  if (jit && pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) != 0) {
    state.SkipWithError("no JIT");
    pcre2_code_free(code);
    return;
  }
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t lines = 0;
  for (auto _ : state) {
    lines = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
      const int rc = jit ? pcre2_jit_match(code, subject, text.size(), pos, 0, data, nullptr)
                         : pcre2_match(code, subject, text.size(), pos, 0, data, nullptr);
      if (rc < 0) break;
      ++lines;
      pos = next_line(text, pcre2_get_ovector_pointer(data)[0]);
    }
    benchmark::DoNotOptimize(lines);
  }
  state.counters["lines"] = static_cast<double>(lines);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
  pcre2_match_data_free(data);
  pcre2_code_free(code);
}

#ifdef LOOPR_HAVE_RE2
void re2_lines(benchmark::State& state, const char* pattern, bool caseless) {
  const std::string& text = corpus();
  RE2::Options options;
  options.set_case_sensitive(!caseless);
  options.set_max_mem(64 << 20);
  RE2 re(pattern, options);
  if (!re.ok()) {
    state.SkipWithError("compile failed");
    return;
  }
  const re2::StringPiece whole(text);
  std::size_t lines = 0;
  for (auto _ : state) {
    lines = 0;
    std::size_t pos = 0;
    re2::StringPiece match;
    while (pos < text.size() && re.Match(whole, pos, text.size(), RE2::UNANCHORED, &match, 1)) {
      ++lines;
      pos = next_line(text, static_cast<std::size_t>(match.data() - text.data()));
    }
    benchmark::DoNotOptimize(lines);
  }
  state.counters["lines"] = static_cast<double>(lines);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
}
#endif

// A literal prefilter's ceiling: glibc memmem over the same loop.
void memmem_lines(benchmark::State& state, const char* needle) {
  const std::string& text = corpus();
  const std::size_t n = std::strlen(needle);
  std::size_t lines = 0;
  for (auto _ : state) {
    lines = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
      const void* hit = memmem(text.data() + pos, text.size() - pos, needle, n);
      if (hit == nullptr) break;
      ++lines;
      pos = next_line(text, static_cast<std::size_t>(static_cast<const char*>(hit) - text.data()));
    }
    benchmark::DoNotOptimize(lines);
  }
  state.counters["lines"] = static_cast<double>(lines);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
}

constexpr const char* kLiteral = "pthread_mutex_lock";
constexpr const char* kAlternation = "foo|bar|baz";
constexpr const char* kClass = "\\w+_t\\b";

BENCHMARK_CAPTURE(pcre2_lines, literal_jit, kLiteral, false, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(pcre2_lines, alternation_jit, kAlternation, false, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(pcre2_lines, class_jit, kClass, false, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(pcre2_lines, caseless_jit, kLiteral, true, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(pcre2_lines, literal_interpreter, kLiteral, false, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(pcre2_lines, class_interpreter, kClass, false, false)
    ->Unit(benchmark::kMillisecond);
#ifdef LOOPR_HAVE_RE2
BENCHMARK_CAPTURE(re2_lines, literal, kLiteral, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(re2_lines, alternation, kAlternation, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(re2_lines, class, kClass, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(re2_lines, caseless, kLiteral, true)->Unit(benchmark::kMillisecond);
#endif
BENCHMARK_CAPTURE(memmem_lines, literal, kLiteral)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
