// reports/corpus.hpp: `moesim calibrate corpus`'s result (predict/corpus.hpp: the fit of
// calibration/corpus_params.hpp's quantities over the measured runs) as text, as JSON, and
// as the calibration profile that carries the fitted values into every system preset
// (calibration/profiles/corpus.json: each value with its parameter's help, its GPUs and
// the fit's in-sample and leave-one-out error as its source).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "predict/corpus.hpp"

namespace moesim::reports {

std::string corpus_text(const predict::CorpusResult& r);
nlohmann::ordered_json corpus_json(const predict::CorpusResult& r);
// The calibration profile (calibration/profiles/corpus.json) carrying the fitted values.
nlohmann::ordered_json corpus_profile(const predict::CorpusResult& r, const std::string& date);

}  // namespace moesim::reports
