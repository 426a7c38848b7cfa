// Which keys of an OpenCLIP 2.24.0 model config this project builds. Every key of the JSON
// is looked up: one that openclip-cpp reads is fine; an OpenCLIP option that changes the
// architecture is accepted only at its OpenCLIP default (the model is then the plain CLIP
// this project builds); a tower this project does not have (timm models other than the
// SigLIP ViTs, Hugging Face, CoCa) and any key OpenCLIP does not know are refused with
// the key, the file and what to do. A config is never trained as something else.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace oc {

enum class ConfigSection { Top, Vision, Text };

// Throws a user error naming `where` (e.g. "model config foo.json vision_cfg") and the key.
void check_config_keys(const nlohmann::json& obj, ConfigSection section, const std::string& where);

}  // namespace oc
