#include "importer/pipeline_split.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace moesim::importer {

AccountedSplit accounted_layout(std::int64_t layers, std::int64_t pp, std::int64_t vpp,
                                bool embedding, bool loss) {
  AccountedSplit out;
  const std::int64_t stages = pp * vpp, units = layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  if (stages <= 0 || units % stages != 0) {
    out.error = fmt::format(
        "{} layers{}{} do not divide into {} virtual stages (pp {} x vpp {}), as Megatron requires",
        layers, embedding ? " + the embedding" : "", loss ? " + the loss" : "", stages, pp, vpp);
    return out;
  }
  const std::int64_t per = units / stages;
  std::string layout;
  for (std::int64_t s = 0; s < stages; ++s) {
    const std::int64_t decoder =
        per - (embedding && s == 0 ? 1 : 0) - (loss && s == stages - 1 ? 1 : 0);
    if (s > 0) layout += '|';
    if (s == 0) layout += 'E';
    layout += std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, decoder)), 't');
    if (s == stages - 1) layout += 'L';
  }
  out.layout = layout;
  return out;
}

}  // namespace moesim::importer
