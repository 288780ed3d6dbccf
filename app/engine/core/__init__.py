"""The shared cross-entropy clustering core: Gaussian families and the CEC cost, moments,
linear algebra, the Hartigan kernels and fit loop, seeding, validation and metrics. Every
method subpackage builds on these; nothing here knows about a particular method."""
