"""What a decode becomes besides text: speech-LLM envelopes (envelopes.py), timed segments
(segments.py) and subtitles (subtitles.py, cues.py). They import nothing but oasr_tok.errors."""
