#include "schedules/pp_layout.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace moesim::schedules {
namespace {

// Guards against layouts like "(t*999999)*999999": no real model has this many items.
constexpr std::size_t kMaxExpandedItems = 1'000'000;

// A token of the expanded layout: an item kind or a stage boundary.
struct Token {
  bool boundary = false;
  LayoutItemKind kind = LayoutItemKind::decoder;
  std::size_t column = 0;  // where it was written, for error messages
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  std::vector<Token> parse() {
    std::vector<Token> out = sequence();
    if (pos_ < s_.size()) fail(pos_, "unbalanced ')'");  // sequence() stops only at ')'
    return out;
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& msg) const {
    throw LayoutError(at + 1, fmt::format("pp_layout \"{}\": {} at column {}", s_, msg, at + 1));
  }

  std::vector<Token> sequence() {
    std::vector<Token> out;
    while (pos_ < s_.size() && s_[pos_] != ')') {
      if (s_[pos_] == ',') {  // purely cosmetic (Megatron's parse_str_to_list deletes commas)
        ++pos_;
        continue;
      }
      const std::size_t start = pos_;
      std::vector<Token> atom_tokens = atom();
      std::size_t times = 1;
      const bool group = s_[start] == '(';
      if (pos_ < s_.size() && s_[pos_] == '*') {
        ++pos_;
        times = number();
      } else if (group) {
        fail(pos_, "a parenthesized group must be followed by '*N'");
      }
      if (out.size() + atom_tokens.size() * times > kMaxExpandedItems)
        fail(start, fmt::format("expands to more than {} items", kMaxExpandedItems));
      for (std::size_t i = 0; i < times; ++i)
        out.insert(out.end(), atom_tokens.begin(), atom_tokens.end());
    }
    return out;
  }

  std::vector<Token> atom() {
    const std::size_t at = pos_;
    const char c = s_[pos_++];
    switch (c) {
      case 'E':
        return {Token{false, LayoutItemKind::embedding, at}};
      case 't':
        return {Token{false, LayoutItemKind::decoder, at}};
      case 'm':
        return {Token{false, LayoutItemKind::mtp, at}};
      case 'L':
        return {Token{false, LayoutItemKind::loss, at}};
      case '|':
        return {Token{true, LayoutItemKind::decoder, at}};
      case '(': {
        if (++depth_ > 16) fail(at, "groups nested too deeply");
        std::vector<Token> inner = sequence();
        if (pos_ >= s_.size() || s_[pos_] != ')') fail(at, "unbalanced '('");
        ++pos_;
        --depth_;
        if (inner.empty()) fail(at, "empty group '()'");
        return inner;
      }
      default:
        fail(at, fmt::format("unexpected '{}' (valid: E t m L | ( ) * , and digits)",
                             std::string(1, c)));
    }
  }

  std::size_t number() {
    const std::size_t start = pos_;
    std::size_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + static_cast<std::size_t>(s_[pos_] - '0');
      if (v > kMaxExpandedItems) fail(start, "repeat count too large");
      ++pos_;
    }
    if (pos_ == start) fail(start, "expected a repeat count after '*'");
    if (v == 0) fail(start, "repeat count must be at least 1");
    return v;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::int64_t VirtualStage::count(LayoutItemKind k) const {
  return std::count_if(items.begin(), items.end(),
                       [k](const LayoutItem& i) { return i.kind == k; });
}

std::string VirtualStage::to_string() const {
  std::string out;
  auto add = [&out](const std::string& s) {
    if (!out.empty()) out += ' ';
    out += s;
  };
  std::int64_t first = -1, last = -1;
  auto flush = [&] {
    if (first < 0) return;
    add(first == last ? fmt::format("t{}", first) : fmt::format("t{}-t{}", first, last));
    first = last = -1;
  };
  for (const auto& it : items) {
    if (it.kind == LayoutItemKind::decoder) {
      if (first < 0) first = it.index;
      last = it.index;
      continue;
    }
    flush();
    add(layout_item_name(it));
  }
  flush();
  return out.empty() ? "-" : out;
}

std::string layout_item_name(const LayoutItem& it) {
  switch (it.kind) {
    case LayoutItemKind::embedding:
      return "E";
    case LayoutItemKind::mtp:
      return fmt::format("m{}", it.index);
    case LayoutItemKind::loss:
      return "L";
    case LayoutItemKind::decoder:
      break;
  }
  return fmt::format("t{}", it.index);
}

PipelineLayout PipelineLayout::parse(std::string_view text, int pp) {
  if (pp < 1) throw LayoutError(0, "pp must be at least 1");
  if (text.empty()) throw LayoutError(0, "pp_layout is empty");
  const std::vector<Token> tokens = Parser(text).parse();

  std::vector<std::vector<LayoutItemKind>> stages(1);
  std::vector<std::vector<std::size_t>> columns(1);
  for (const Token& t : tokens) {
    if (t.boundary) {
      stages.emplace_back();
      columns.emplace_back();
    } else {
      stages.back().push_back(t.kind);
      columns.back().push_back(t.column);
    }
  }
  const auto fail = [&](std::size_t column, const std::string& msg) {
    throw LayoutError(column, fmt::format("pp_layout \"{}\": {}", text, msg));
  };
  const std::size_t n = stages.size();
  if (n % static_cast<std::size_t>(pp) != 0)
    fail(0, fmt::format("{} virtual stages cannot be spread over pp={} ranks (need a multiple "
                        "of {}; vpp = stages / pp)",
                        n, pp, pp));
  // Placement rules, each reported at the column of the offending item.
  std::size_t e_count = 0, l_count = 0;
  const auto decoders_after = [&](std::size_t s0, std::size_t i0) {
    std::size_t c = 0;
    for (std::size_t s = s0; s < n; ++s)
      for (std::size_t i = s == s0 ? i0 + 1 : 0; i < stages[s].size(); ++i)
        c += stages[s][i] == LayoutItemKind::decoder ? 1 : 0;
    return c;
  };
  for (std::size_t s = 0; s < n; ++s) {
    const auto& st = stages[s];
    for (std::size_t i = 0; i < st.size(); ++i) {
      const std::size_t col = columns[s][i] + 1;
      switch (st[i]) {
        case LayoutItemKind::embedding:
          if (++e_count > 1) fail(col, "more than one embedding 'E'");
          if (s != 0 || i != 0) fail(col, "'E' must come first in the first virtual stage");
          break;
        case LayoutItemKind::loss:
          if (++l_count > 1) fail(col, "more than one loss 'L'");
          if (s != n - 1 || i != st.size() - 1)
            fail(col, "'L' must come last in the final virtual stage");
          break;
        case LayoutItemKind::mtp:
          // Megatron-Core PipelineParallelLayerLayout.validate_layer_layout: MTP layers
          // come after every decoder layer in layer order, and only in the last virtual
          // stage of their pipeline rank; one rank holding MTP layers holds them all.
          if (s / static_cast<std::size_t>(pp) != n / static_cast<std::size_t>(pp) - 1)
            fail(col, "MTP layers 'm' must be in the last virtual stage of their pipeline rank");
          if (decoders_after(s, i) > 0)
            fail(col, "decoder layers 't' must all come before the MTP layers 'm'");
          break;
        case LayoutItemKind::decoder:
          break;
      }
    }
  }
  {
    int mtp_ranks = 0;
    for (std::size_t s = n - static_cast<std::size_t>(pp); s < n; ++s)
      mtp_ranks += std::count(stages[s].begin(), stages[s].end(), LayoutItemKind::mtp) > 0 ? 1 : 0;
    if (mtp_ranks > 1)
      fail(0,
           "MTP layers 'm' split over several pipeline ranks (Megatron's mtp_loss_split, with a "
           "loss "
           "'L' per MTP layer) are not modeled; put them in one virtual stage");
  }
  if (e_count == 0) fail(0, "no embedding 'E' (it belongs at the start of the first stage)");
  if (l_count == 0) fail(0, "no loss 'L' (it belongs at the end of the final stage)");
  return from_stages(std::move(stages), pp);
}

PipelineLayout PipelineLayout::even(std::int64_t decoder_layers, std::int64_t mtp_layers, int pp,
                                    int vpp) {
  if (pp < 1 || vpp < 1) throw LayoutError(0, "pp and vpp must be at least 1");
  const std::int64_t n = static_cast<std::int64_t>(pp) * vpp;
  if (decoder_layers < n)
    throw LayoutError(0, fmt::format("{} decoder layers cannot fill pp x vpp = {} virtual stages",
                                     decoder_layers, n));
  std::vector<std::vector<LayoutItemKind>> stages(static_cast<std::size_t>(n));
  for (std::int64_t s = 0; s < n; ++s) {
    auto& st = stages[static_cast<std::size_t>(s)];
    if (s == 0) st.push_back(LayoutItemKind::embedding);
    const std::int64_t layers = decoder_layers / n + (s < decoder_layers % n ? 1 : 0);
    st.insert(st.end(), static_cast<std::size_t>(layers), LayoutItemKind::decoder);
    if (s == n - 1) {
      st.insert(st.end(), static_cast<std::size_t>(mtp_layers), LayoutItemKind::mtp);
      st.push_back(LayoutItemKind::loss);
    }
  }
  return from_stages(std::move(stages), pp);
}

PipelineLayout PipelineLayout::from_stages(std::vector<std::vector<LayoutItemKind>> stages,
                                           int pp) {
  PipelineLayout out;
  out.pp_ = pp;
  out.vpp_ = static_cast<int>(stages.size() / static_cast<std::size_t>(pp));
  std::int64_t next_decoder = 0, next_mtp = 0;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    VirtualStage vs;
    vs.pp_rank = static_cast<int>(s % static_cast<std::size_t>(pp));
    vs.vp = static_cast<int>(s / static_cast<std::size_t>(pp));
    for (LayoutItemKind k : stages[s]) {
      std::int64_t index = -1;
      if (k == LayoutItemKind::decoder) index = next_decoder++;
      if (k == LayoutItemKind::mtp) index = next_mtp++;
      vs.items.push_back({k, index});
    }
    out.stages_.push_back(std::move(vs));
  }
  return out;
}

std::int64_t PipelineLayout::count(LayoutItemKind k) const {
  std::int64_t c = 0;
  for (const auto& s : stages_) c += s.count(k);
  return c;
}

std::int64_t PipelineLayout::decoder_layers_on_rank(int pp_rank) const {
  std::int64_t c = 0;
  for (const auto& s : stages_)
    if (s.pp_rank == pp_rank) c += s.count(LayoutItemKind::decoder);
  return c;
}

}  // namespace moesim::schedules
