"""Whisper (OpenAI, MIT): native encoder-decoder, log-mel front end, tokenizer, checkpoint adapters, decoding."""
