#pragma once
// The HParams plugin's summaries as TensorBoard's hparams plugin writes them (its summary.py): one Summary
// value tagged "_hparams_/<kind>", its metadata naming the "hparams" plugin with an HParamsPluginData as
// content, and an empty float tensor. Private to this library (it names protobuf types).
#include "tensorboard/event_file.hpp"

#include "tensorboard/compat/proto/summary.pb.h"

#include <string>
#include <vector>

namespace gradsweep::tensorboard {

::tensorboard::Summary session_start_summary(const HParams& hparams, double start_time_secs);
::tensorboard::Summary session_end_summary(SessionStatus status, double end_time_secs);
::tensorboard::Summary experiment_summary(const std::vector<HParamAxis>& hparams,
                                          const std::vector<std::string>& metric_tags, double time_created_secs);

}  // namespace gradsweep::tensorboard
