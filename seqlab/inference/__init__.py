"""Using a trained model: looking inside its forward pass (inspect)."""
