#pragma once
// An object created by a plugin, owned by the host, destroyed by the plugin's own destroy function.
#include "plugins/plugin_registry.hpp"

#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <stdexcept>
#include <string>

namespace gradsweep::host {

template <class Abi>
constexpr sdk::PluginKind kind_of();
template <>
constexpr sdk::PluginKind kind_of<sdk::ModelAbi>() {
  return sdk::PluginKind::Model;
}
template <>
constexpr sdk::PluginKind kind_of<sdk::StrategyAbi>() {
  return sdk::PluginKind::Strategy;
}

template <class Abi>
class PluginInstance {
 public:
  // `context` and everything it refers to must outlive the instance.
  PluginInstance(const PluginRecord& record, const sdk::PluginContext& context) : record_(&record) {
    if (record.kind != kind_of<Abi>())
      throw std::runtime_error("plugin '" + record.name + "' is a " + sdk::to_string(record.kind) + ", not a " +
                               sdk::to_string(kind_of<Abi>()));
    sdk::Status status;
    void* object = record.descriptor->create(&context, &status);
    if (!status.ok || object == nullptr)
      throw std::runtime_error(std::string(sdk::to_string(record.kind)) + " '" + record.name +
                               "': " + (status.message.empty() ? "create failed" : status.message));
    object_ = static_cast<Abi*>(object);
  }
  ~PluginInstance() {
    if (object_ != nullptr) record_->descriptor->destroy(static_cast<void*>(object_));
  }
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;

  Abi* operator->() const { return object_; }
  Abi& operator*() const { return *object_; }
  const PluginRecord& record() const { return *record_; }

  // Runs a boundary call and turns a failed Status into an exception naming the plugin.
  void call(const sdk::Status& status, const char* what) const {
    if (!status.ok)
      throw std::runtime_error(std::string(sdk::to_string(record_->kind)) + " '" + record_->name + "' " + what + ": " +
                               status.message);
  }

 private:
  const PluginRecord* record_;
  Abi* object_ = nullptr;
};

using ModelInstance = PluginInstance<sdk::ModelAbi>;
using StrategyInstance = PluginInstance<sdk::StrategyAbi>;

}  // namespace gradsweep::host
