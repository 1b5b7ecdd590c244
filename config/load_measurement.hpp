// config/load_measurement.hpp: reading a calibration measurement file
// (calibration/measurement.hpp gives the schema) with the scenario loader's strictness:
// unknown keys, missing header fields (device, date, tool, source), wrong types and
// out-of-range numbers are InputErrors naming the file and the JSON path.
#pragma once

#include <string>

#include "calibration/measurement.hpp"

namespace moesim::config {

calibration::Measurement load_measurement_file(const std::string& path);
calibration::Measurement load_measurement_text(const std::string& text, const std::string& file);

}  // namespace moesim::config
