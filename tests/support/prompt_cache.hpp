// Prompt caching as the model APIs bill it, for ModelApiServer.
//
// AnthropicPromptCache (explicit breakpoints, docs "Prompt caching"):
//   - a prompt is its blocks in order (tools → system → messages); a block
//     carrying cache_control is a breakpoint;
//   - an entry is the exact prefix up to and including a breakpoint's block:
//     a chained 64-bit FNV-1a hash of the model and every block's canonical
//     JSON without cache_control (so moving a breakpoint does not change the
//     key), with the prefix's tokens;
//   - reading: for each breakpoint, the boundaries from the breakpoint back
//     to `lookback` blocks before it are tried, nearest first; the longest
//     prefix found over all breakpoints is read (and its entry's life is
//     renewed);
//   - writing: every breakpoint whose prefix has at least `min_tokens`
//     tokens gets (or renews) an entry living `ttl`; shorter prefixes are
//     not cached at all;
//   - billing: cache_read = the read prefix's tokens; cache_creation = the
//     last cacheable breakpoint's prefix minus the read (0 when the read
//     reaches it); input_tokens = the rest (what follows the last
//     breakpoint, or everything without a cacheable one).
// OpenAiPrefixCache (automatic, docs "Prompt caching" of the OpenAI API):
//   every block boundary of every answered prompt is remembered for `ttl`;
//   cached_tokens = the longest remembered prefix of a new prompt, when it
//   has at least `min_tokens`, rounded down to a multiple of `granularity`.
// Time is whatever the caller passes (ModelApiServer's clock can be moved
// forward). Threads: none of their own; the caller serializes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/support/model_api_prompt.hpp"

namespace loopr::test {

using CacheClock = std::chrono::steady_clock;

struct CacheUse {
  std::int64_t read_tokens = 0;
  std::int64_t write_tokens = 0;  // Anthropic only
};

// The chained prefix hash after each block of `blocks` (element k covers
// blocks 0..k), seeded with the model name.
std::vector<std::uint64_t> prefix_hashes(const std::string& model,
                                         const std::vector<PromptBlock>& blocks);

class AnthropicPromptCache {
 public:
  struct Settings {
    std::int64_t min_tokens = 1024;
    std::size_t lookback = 20;
    std::chrono::seconds ttl{300};
  };
  explicit AnthropicPromptCache(Settings settings) : settings_(settings) {}

  // What `prompt` reads and writes at `now`, without changing the cache.
  CacheUse plan(const ParsedPrompt& prompt, CacheClock::time_point now) const;
  // plan(), then the reads renewed and the writes stored.
  CacheUse use(const ParsedPrompt& prompt, CacheClock::time_point now);
  std::size_t entries(CacheClock::time_point now) const;

 private:
  struct Entry {
    std::int64_t tokens = 0;
    CacheClock::time_point expires;
  };
  struct Plan {
    CacheUse use;
    std::vector<std::uint64_t> hashes;
    long read_block = -1;
  };
  Plan make_plan(const ParsedPrompt& prompt, CacheClock::time_point now) const;

  Settings settings_;
  std::unordered_map<std::uint64_t, Entry> entries_;
};

class OpenAiPrefixCache {
 public:
  struct Settings {
    std::int64_t min_tokens = 1024;
    std::int64_t granularity = 128;
    std::chrono::seconds ttl{300};
  };
  explicit OpenAiPrefixCache(Settings settings) : settings_(settings) {}

  // The cached tokens of `prompt` at `now`; then remembers its prefixes.
  CacheUse use(const ParsedPrompt& prompt, CacheClock::time_point now);

 private:
  Settings settings_;
  std::unordered_map<std::uint64_t, CacheClock::time_point> seen_;  // hash → expiry
};

}  // namespace loopr::test
