#include "tests/support/prompt_cache.hpp"

#include <algorithm>

namespace loopr::test {
namespace {

constexpr std::uint64_t kFnvOffset = 14695981039346656037ull;
constexpr std::uint64_t kFnvPrime = 1099511628211ull;

std::uint64_t fnv1a(std::uint64_t hash, std::string_view bytes) {
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

// Tokens of blocks 0..k, for each k.
std::vector<std::int64_t> prefix_tokens(const std::vector<PromptBlock>& blocks) {
  std::vector<std::int64_t> out;
  out.reserve(blocks.size());
  std::int64_t sum = 0;
  for (const auto& block : blocks) {
    sum += block.tokens;
    out.push_back(sum);
  }
  return out;
}

}  // namespace

std::vector<std::uint64_t> prefix_hashes(const std::string& model,
                                         const std::vector<PromptBlock>& blocks) {
  std::vector<std::uint64_t> out;
  out.reserve(blocks.size());
  std::uint64_t hash = fnv1a(fnv1a(kFnvOffset, model), "\x1f");
  for (const auto& block : blocks) {
    // The length first, so no two different block sequences chain alike.
    hash = fnv1a(hash, std::to_string(block.key.size()) + ":");
    hash = fnv1a(hash, block.key);
    out.push_back(hash);
  }
  return out;
}

AnthropicPromptCache::Plan AnthropicPromptCache::make_plan(const ParsedPrompt& prompt,
                                                           CacheClock::time_point now) const {
  Plan plan;
  plan.hashes = prefix_hashes(prompt.model, prompt.blocks);
  const auto tokens = prefix_tokens(prompt.blocks);
  auto live = [&](std::size_t k) {
    auto it = entries_.find(plan.hashes[k]);
    return it != entries_.end() && it->second.expires > now && tokens[k] >= settings_.min_tokens;
  };
  long last_cacheable = -1;
  for (std::size_t b = 0; b < prompt.blocks.size(); ++b) {
    if (!prompt.blocks[b].breakpoint) continue;
    if (tokens[b] >= settings_.min_tokens) last_cacheable = static_cast<long>(b);
    // From the breakpoint back through `lookback` earlier boundaries.
    const std::size_t stop = b >= settings_.lookback ? b - settings_.lookback : 0;
    for (std::size_t k = b + 1; k-- > stop;) {
      if (live(k)) {
        plan.read_block = std::max(plan.read_block, static_cast<long>(k));
        break;
      }
    }
  }
  if (plan.read_block >= 0)
    plan.use.read_tokens = tokens[static_cast<std::size_t>(plan.read_block)];
  if (last_cacheable >= 0) {
    plan.use.write_tokens = std::max<std::int64_t>(
        0, tokens[static_cast<std::size_t>(last_cacheable)] - plan.use.read_tokens);
  }
  return plan;
}

CacheUse AnthropicPromptCache::plan(const ParsedPrompt& prompt, CacheClock::time_point now) const {
  return make_plan(prompt, now).use;
}

CacheUse AnthropicPromptCache::use(const ParsedPrompt& prompt, CacheClock::time_point now) {
  Plan plan = make_plan(prompt, now);
  const auto tokens = prefix_tokens(prompt.blocks);
  const auto expires = now + settings_.ttl;
  if (plan.read_block >= 0) {
    entries_[plan.hashes[static_cast<std::size_t>(plan.read_block)]].expires = expires;
  }
  for (std::size_t b = 0; b < prompt.blocks.size(); ++b) {
    if (prompt.blocks[b].breakpoint && tokens[b] >= settings_.min_tokens) {
      entries_[plan.hashes[b]] = {tokens[b], expires};
    }
  }
  return plan.use;
}

std::size_t AnthropicPromptCache::entries(CacheClock::time_point now) const {
  return static_cast<std::size_t>(
      std::count_if(entries_.begin(), entries_.end(),
                    [&](const auto& entry) { return entry.second.expires > now; }));
}

CacheUse OpenAiPrefixCache::use(const ParsedPrompt& prompt, CacheClock::time_point now) {
  const auto hashes = prefix_hashes(prompt.model, prompt.blocks);
  const auto tokens = prefix_tokens(prompt.blocks);
  CacheUse use;
  for (std::size_t k = hashes.size(); k-- > 0;) {
    auto it = seen_.find(hashes[k]);
    if (it != seen_.end() && it->second > now) {
      if (tokens[k] >= settings_.min_tokens) {
        use.read_tokens = tokens[k] / settings_.granularity * settings_.granularity;
      }
      break;
    }
  }
  for (auto hash : hashes)
    seen_[hash] = now + settings_.ttl;
  return use;
}

}  // namespace loopr::test
