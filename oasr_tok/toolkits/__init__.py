"""Faces for other toolkits' callers: vLLM/SGLang's detokenizer (detokenizer.py), NeMo
(nemo.py), transformers' CTC tokenizer (hf_ctc.py), sherpa-onnx's hotwords (hotwords.py) and
batch helpers (batch.py)."""
