#include "tools/zoo/zoo_models.h"

namespace memplan::zoo {

// Published counts (sum of p.numel() over parameters(); tied weights once; buffers excluded):
//  mlp          (784*1024 + 1024) + (1024*1024 + 1024) + (1024*10 + 10)
//  resnet18     torchvision.models.resnet18 docs, "num_params": 11689512
//  resnet50     torchvision.models.resnet50 docs (IMAGENET1K_V1), "num_params": 25557032
//  bert_base    bert-base-uncased BertModel: embeddings 23,837,184 + 12 x 7,087,872 + pooler
//               590,592
//  gpt2_small   GPT2LMHeadModel: wte 38,597,376 + wpe 786,432 + 12 x 7,087,872 + ln_f 1,536
//  gpt2_xl      wte+wpe 82,049,600 + 48 x 30,740,800 + ln_f 3,200
//  vit_b16      torchvision.models.vit_b_16 docs, "num_params": 86567656
//  llama3_8b    Meta-Llama-3-8B LlamaForCausalLM: embed_tokens 525,336,576 + 32 x 218,112,000 +
//               norm 4,096 + lm_head 525,336,576 (untied)
//  mistral_7b   Mistral-7B-v0.1 MistralForCausalLM: embed_tokens 131,072,000 + 32 x 218,112,000
//               + norm 4,096 + lm_head 131,072,000
const std::vector<ZooModel>& AllZooModels() {
  static const std::vector<ZooModel> models = {
      {"mlp", 1'863'690, BuildMlp},
      {"resnet18", 11'689'512, BuildResNet18},
      {"resnet50", 25'557'032, BuildResNet50},
      {"bert_base", 109'482'240, BuildBertBase},
      {"gpt2_small", 124'439'808, BuildGpt2Small},
      {"gpt2_xl", 1'557'611'200, BuildGpt2Xl},
      {"vit_b16", 86'567'656, BuildVitB16},
      {"llama3_8b", 8'030'261'248, BuildLlama3_8b},
      {"mistral_7b", 7'241'732'096, BuildMistral7b},
  };
  return models;
}

}  // namespace memplan::zoo
