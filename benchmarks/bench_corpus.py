"""Realistic recogniser hypotheses for the benchmarks.

Each tokenizer gets ids made by encoding the same multi-script passages (English, Chinese,
Chinese with English words) with its own encoder, or with the SentencePiece model that
shares its ids, and repeating that passage to the length a benchmark needs. The passages
read like meeting transcripts, since that is what long-transcript streaming serves.
"""

from __future__ import annotations

ENGLISH = (
    "good morning everyone and welcome to the quarterly review of the speech recognition "
    "project. over the last three months the team reduced the word error rate on the noisy "
    "test set from eleven point four to eight point nine percent, mostly by cleaning the "
    "training transcripts and adding two thousand hours of far field recordings. i'll walk "
    "you through the numbers first, then we'll talk about latency, which is still too high "
    "on long meetings, and finally about the plan for the next release."
)

CHINESE = (
    "今天下午三点我们在会议室讨论了语音识别系统的最新进展。团队在嘈杂环境下的识别准确率"
    "提高了百分之十五，主要原因是增加了更多的远场录音数据，并且改进了解码器的流式处理方式。"
    "下个月我们计划把模型部署到更多的城市，同时继续优化长时间会议的延迟问题。"
)

MIXED = (
    "我们下周要和 product team 一起 review 这个 feature，如果 latency 还是超过 two hundred "
    "milliseconds，就需要先优化 streaming decoder 再上线。"
)

#: Every script's widest characters, above U+FFFF included (emoji with modifiers and joiners,
#: CJK Extension B, mathematical letters), which byte-level vocabularies split across tokens and
#: which make CPython store the transcript as UCS-4 once one is in it. In "multi" they arrive
#: early (the first period of every hypothesis holds them) and again every period after.
WORLD = (
    "the team in 東京 sent 👍🏽 and 🎉 after the demo; 𠀀𠀁𠀂 are rare characters, 𝐀𝐁𝐂 𝑥𝑦𝑧 are "
    "mathematical letters, and the flag 🇫🇷 and the family 👨‍👩‍👧 are several code points each. "
    "Привет, как дела? مرحبا بالعالم. नमस्ते दुनिया. สวัสดีครับ. 안녕하세요 여러분."
)

#: Which passages a tokenizer gets: English-only models (LibriSpeech BPE) get English in
#: upper case, as their training transcripts are; multilingual ones get all four (FunASR's
#: Paraformer vocabulary has Chinese and English only: "zh_en").
PASSAGES = {
    "en_upper": (ENGLISH.upper(),),
    "multi": (ENGLISH, CHINESE, MIXED, WORLD),
    "zh_en": (CHINESE, MIXED),
}
