#include "train/plan/scaling_profile.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "framework/core/error.h"

namespace farthing::train {

namespace {

using nlohmann::json;

json link_json(const LinkCost& l) { return {{"latency_s", l.latency_s}, {"bytes_per_s", l.bytes_per_s}}; }

LinkCost link_from(const json& j) { return {j.at("latency_s").get<double>(), j.at("bytes_per_s").get<double>(), 0.0, 0}; }

}  // namespace

const StepCompute& ScalingProfile::compute_at(int stage) const {
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i] == stage) return compute[i];
  }
  FARTHING_FAIL("scaling profile of ", preset, " has no compute for ZeRO stage ", stage);
}

void write_scaling_profile(const std::filesystem::path& path, const ScalingProfile& p) {
  json stages = json::array();
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const StepCompute& c = p.compute[i];
    stages.push_back({{"stage", p.stages[i]},
                      {"turn_seconds", c.turn_seconds},
                      {"passes", c.passes},
                      {"optimizer_seconds", c.optimizer_seconds},
                      {"optimizer_elems", c.optimizer_elems},
                      {"other_seconds", c.other_seconds}});
  }
  const json j = {{"preset", p.preset},
                  {"seq", p.seq},
                  {"batch", p.batch},
                  {"threads", p.threads},
                  {"world_size", p.world_size},
                  {"param_count", p.param_count},
                  {"links",
                   {{"source", p.links.source},
                    {"all_gather", link_json(p.links.all_gather)},
                    {"reduce_scatter", link_json(p.links.reduce_scatter)},
                    {"all_reduce", link_json(p.links.all_reduce)}}},
                  {"stages", stages}};
  std::ofstream out(path);
  FARTHING_CHECK(out.good(), "cannot write ", path.string());
  out << j.dump(2) << "\n";
  FARTHING_CHECK(out.good(), "writing ", path.string(), " failed");
}

ScalingProfile read_scaling_profile(const std::filesystem::path& path) {
  std::ifstream in(path);
  FARTHING_CHECK(in.good(), "cannot read scaling profile ", path.string());
  try {
    const json j = json::parse(in);
    ScalingProfile p;
    p.preset = j.at("preset").get<std::string>();
    p.seq = j.at("seq").get<int64_t>();
    p.batch = j.at("batch").get<int64_t>();
    p.threads = j.at("threads").get<int>();
    p.world_size = j.at("world_size").get<int>();
    p.param_count = j.at("param_count").get<int64_t>();
    const json& links = j.at("links");
    p.links = {"measured np " + std::to_string(p.world_size) + " (" + path.filename().string() + ")",
               links.at("source").get<std::string>(), link_from(links.at("all_gather")),
               link_from(links.at("reduce_scatter")), link_from(links.at("all_reduce"))};
    for (const json& s : j.at("stages")) {
      StepCompute c;
      c.turn_seconds = s.at("turn_seconds").get<std::vector<double>>();
      c.passes = s.at("passes").get<int64_t>();
      c.optimizer_seconds = s.at("optimizer_seconds").get<double>();
      c.optimizer_elems = s.at("optimizer_elems").get<int64_t>();
      c.other_seconds = s.at("other_seconds").get<double>();
      p.stages.push_back(s.at("stage").get<int>());
      p.compute.push_back(std::move(c));
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    FARTHING_FAIL("scaling profile ", path.string(), " is not one that farthing bench dist --out writes: ", e.what());
  }
}

}  // namespace farthing::train
