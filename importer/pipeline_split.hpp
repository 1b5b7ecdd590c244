// importer/pipeline_split.hpp: Megatron-Core's --account-for-embedding-in-pipeline-split and
// --account-for-loss-in-pipeline-split as the equivalent pp_layout (Megatron-Core
// transformer_block.py, get_num_layers_to_build): the embedding and the loss count as a
// layer each, so the L + e + l units split evenly over the pp x vpp virtual stages, the
// first one building a decoder layer fewer (e) and the last one (l). Megatron requires the
// units to divide evenly (its config check).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace moesim::importer {

struct AccountedSplit {
  std::optional<std::string> layout;  // "Et*23|...|t*23L"; absent: `error` says why
  std::string error;
};

AccountedSplit accounted_layout(std::int64_t layers, std::int64_t pp, std::int64_t vpp,
                                bool embedding, bool loss);

}  // namespace moesim::importer
