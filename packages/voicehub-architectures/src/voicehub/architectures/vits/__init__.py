"""VITS (Piper voices): native generator, configs, checkpoint adapters and text front end."""
