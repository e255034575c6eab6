"""Import history from other trackers (TensorBoard, MLflow) as ordinary NuBoard runs."""
