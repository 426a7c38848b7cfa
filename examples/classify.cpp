// Example of the public API: label probabilities for images, as OpenCLIP's README does
//   ./example_classify ViT-B-32 weights.safetensors image.png "a diagram" "a dog" "a cat"
#include <cstdio>
#include <openclip/openclip.h>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s MODEL WEIGHTS IMAGE LABEL...\n", argv[0]);
    return 2;
  }
  try {
    openclip::Model model = openclip::Model::load(argv[1], argv[2]);
    std::vector<std::string> labels(argv + 4, argv + argc);
    auto probs = model.classify({argv[3]}, labels);
    std::printf("Label probs:");
    for (float p : probs[0]) std::printf(" %.4f", p);
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
