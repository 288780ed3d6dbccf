"""Image featurization as a background job: recipes, pictures and slides."""
