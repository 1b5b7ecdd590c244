// config/storage.hpp: checkpoint storage presets and the defaults of a scenario's
// `goodput` block (issue #26 item 4), each number with its source. The model that uses
// them: predict/goodput.hpp.
//
// Presets (GB/s = 1e9 bytes/s; docs/reference/scale-and-goodput.md section 7, where "S"
// marks a second-hand figure there):
//   vast      125 both ways: the midpoint of the 50-200 GB/s of global checkpoint
//             bandwidth VAST Data measured across 40 production runs of 45B-1T+ models (S)
//   tectonic  2,000 both ways: Meta's Tectonic, 2 TB/s sustained for Llama 3's checkpoints
//             (Llama 3 section 3.3.1; 7 TB/s peak; no separate read figure)
//   3fs       7,257 both ways (6.6 TiB/s), 25 GB/s a client node: DeepSeek's 3FS README,
//             180 storage nodes, aggregate read with training traffic in the background,
//             clients on one 200G link; no write figure is published, the read one is taken
//   gpfs      57.5 both ways: BLOOM-176B's 2.3 TB checkpoint written in 40 s by 384
//             processes on GPFS (S); no read figure, the write one is taken
// Defaults of the `goodput` block:
//   interruptions_per_gpu_day          419 / 54 / 16,384 = 4.74e-4: Llama 3's unexpected
//                                      interruptions on 16,384 H100 over 54 days (section
//                                      3.3.4, Table 5): 7.8 a day, one every 3.1 h
//   planned_interruptions_per_gpu_day  47 / 54 / 16,384 = 5.31e-5: its planned ones
//   restart_s                          600: MegaScale section 6.2, detection and diagnostic
//                                      tests in under 10 minutes (the checkpoint's load is
//                                      priced apart, from the storage)
//   storage                            vast: measured in production, the middle of the four
//   async_save                         false: Megatron's default (--async-save off)
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/scenario.hpp"

namespace moesim::config {

struct StoragePreset {
  std::string_view name;
  double write_GBps, read_GBps, client_GBps;
  std::string_view source;
};
std::span<const StoragePreset> storage_presets();
// The preset as a StorageSpec; nullopt for an unknown name.
std::optional<StorageSpec> storage_preset(std::string_view name);
std::string known_storage_names();

// The `goodput` block's values when the scenario gives none, with their sources.
GoodputSettings default_goodput();
std::string_view goodput_default_source(std::string_view key);

}  // namespace moesim::config
