// schedules/pp_layout.hpp: Megatron's pipeline layout (--pipeline-model-parallel-layout).
//
// Grammar (Megatron-Core PipelineParallelLayerLayout, extended to nested groups):
//   layout := item*            item := atom ('*' N)?       N >= 1
//   atom   := 'E' | 't' | 'm' | 'L' | '|' | '(' layout ')' '*' N
// E = embedding, t = transformer (decoder) layer, m = MTP layer, L = loss (output head),
// '|' = boundary between virtual stages. The expanded string splits at '|' into
// pp x vpp virtual stages, listed in virtual-stage order: virtual stage s lives on
// pipeline rank s % pp as its chunk s / pp (Megatron's interleaved placement).
// Rules: one E, first in virtual stage 0; one L, last in the final virtual stage; MTP
// layers only in the final virtual stage, after its decoder layers. Stages may be empty.
//
// Without a layout string the contract's default applies: decoder layers spread as
// evenly as possible over pp x vpp virtual stages, earlier stages taking the remainder,
// E on the first and MTP + L on the last.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace moesim::schedules {

// A malformed or inconsistent layout; column is 1-based within the string (0 = none).
class LayoutError : public std::runtime_error {
 public:
  LayoutError(std::size_t column, const std::string& what)
      : std::runtime_error(what), column_(column) {}
  std::size_t column() const { return column_; }

 private:
  std::size_t column_;
};

enum class LayoutItemKind { embedding, decoder, mtp, loss };

struct LayoutItem {
  LayoutItemKind kind;
  std::int64_t index = -1;  // decoder layer or MTP layer number; -1 for E and L
};

// An item as the layout string writes it: "t12" (decoder layer 12), "E", "L", "m0".
std::string layout_item_name(const LayoutItem& it);

struct VirtualStage {
  int pp_rank = 0;
  int vp = 0;  // virtual (interleaved) chunk on that rank
  std::vector<LayoutItem> items;

  std::int64_t count(LayoutItemKind k) const;
  bool has(LayoutItemKind k) const { return count(k) > 0; }
  std::string to_string() const;  // e.g. "E t0", "t1-t2", "t60 m0 L"
};

class PipelineLayout {
 public:
  // Parses a layout string for `pp` pipeline ranks; vpp follows from the stage count.
  static PipelineLayout parse(std::string_view text, int pp);
  // The contract's default split.
  static PipelineLayout even(std::int64_t decoder_layers, std::int64_t mtp_layers, int pp, int vpp);

  int pp() const { return pp_; }
  int vpp() const { return vpp_; }
  // Virtual stages in virtual-stage order (s = vp * pp + rank).
  const std::vector<VirtualStage>& stages() const { return stages_; }
  const VirtualStage& stage(int pp_rank, int vp) const {
    return stages_.at(static_cast<std::size_t>(vp) * static_cast<std::size_t>(pp_) +
                      static_cast<std::size_t>(pp_rank));
  }
  std::int64_t count(LayoutItemKind k) const;
  // Decoder layers on one pipeline rank over all its virtual stages.
  std::int64_t decoder_layers_on_rank(int pp_rank) const;

 private:
  static PipelineLayout from_stages(std::vector<std::vector<LayoutItemKind>> stages, int pp);
  int pp_ = 1;
  int vpp_ = 1;
  std::vector<VirtualStage> stages_;
};

}  // namespace moesim::schedules
