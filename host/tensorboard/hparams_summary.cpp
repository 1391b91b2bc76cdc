#include "tensorboard/hparams_summary.hpp"

#include "tensorboard/plugins/hparams/plugin_data.pb.h"

namespace gradsweep::tensorboard {

namespace pb = ::tensorboard;
namespace hp = ::tensorboard::hparams;

namespace {
// The plugin's names and its data version (tensorboard/plugins/hparams/metadata.py).
constexpr const char* kPluginName = "hparams";
constexpr int kPluginDataVersion = 0;

pb::Summary plugin_summary(const std::string& tag, hp::HParamsPluginData data) {
  data.set_version(kPluginDataVersion);
  pb::Summary summary;
  pb::Summary::Value* value = summary.add_value();
  value->set_tag(tag);
  pb::SummaryMetadata::PluginData* plugin = value->mutable_metadata()->mutable_plugin_data();
  plugin->set_plugin_name(kPluginName);
  plugin->set_content(data.SerializeAsString());
  // metadata.NULL_TENSOR: a float tensor of shape [0], so that readers file the value as a tensor summary.
  pb::TensorProto* tensor = value->mutable_tensor();
  tensor->set_dtype(pb::DT_FLOAT);
  tensor->mutable_tensor_shape()->add_dim()->set_size(0);
  return summary;
}

void set_value(google::protobuf::Value& out, const HParamValue& value) {
  if (const double* d = std::get_if<double>(&value)) out.set_number_value(*d);
  if (const bool* b = std::get_if<bool>(&value)) out.set_bool_value(*b);
  if (const std::string* s = std::get_if<std::string>(&value)) out.set_string_value(*s);
}

// The dashboard's type of an axis: FLOAT64 or BOOL when every value is one, STRING otherwise (the
// caller gives a mixed axis as strings).
hp::DataType data_type(const std::vector<HParamValue>& values) {
  if (values.empty()) return hp::DATA_TYPE_UNSET;
  const std::size_t kind = values.front().index();
  for (const HParamValue& v : values)
    if (v.index() != kind) return hp::DATA_TYPE_STRING;
  return kind == 0 ? hp::DATA_TYPE_FLOAT64 : kind == 1 ? hp::DATA_TYPE_BOOL : hp::DATA_TYPE_STRING;
}
}  // namespace

pb::Summary session_start_summary(const HParams& hparams, double start_time_secs) {
  hp::HParamsPluginData data;
  hp::SessionStartInfo* start = data.mutable_session_start_info();
  for (const auto& [name, value] : hparams) set_value((*start->mutable_hparams())[name], value);
  start->set_start_time_secs(start_time_secs);
  return plugin_summary("_hparams_/session_start_info", std::move(data));
}

pb::Summary session_end_summary(SessionStatus status, double end_time_secs) {
  hp::HParamsPluginData data;
  hp::SessionEndInfo* end = data.mutable_session_end_info();
  end->set_status(status == SessionStatus::Success   ? hp::STATUS_SUCCESS
                  : status == SessionStatus::Failure ? hp::STATUS_FAILURE
                                                     : hp::STATUS_RUNNING);
  end->set_end_time_secs(end_time_secs);
  return plugin_summary("_hparams_/session_end_info", std::move(data));
}

pb::Summary experiment_summary(const std::vector<HParamAxis>& hparams, const std::vector<std::string>& metric_tags,
                               double time_created_secs) {
  hp::HParamsPluginData data;
  hp::Experiment* experiment = data.mutable_experiment();
  experiment->set_time_created_secs(time_created_secs);
  for (const HParamAxis& axis : hparams) {
    hp::HParamInfo* info = experiment->add_hparam_infos();
    info->set_name(axis.name);
    info->set_type(data_type(axis.values));
    for (const HParamValue& v : axis.values) set_value(*info->mutable_domain_discrete()->add_values(), v);
  }
  for (const std::string& tag : metric_tags) experiment->add_metric_infos()->mutable_name()->set_tag(tag);
  return plugin_summary("_hparams_/experiment", std::move(data));
}

}  // namespace gradsweep::tensorboard
