"""Object storage (S3, GCS, Azure, any fsspec URL): opening a store, listing it, and one clear
line for each way it fails. fsspec is imported only when a URL is used."""
