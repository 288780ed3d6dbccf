"""Reading and writing stored data: arrays (features, ids, ground truth, views, images, pixel
features, run labels) in the chunked array store, their metadata in SQL, a run's frozen side
information. Below both the use cases (`app.services`) and the job runner (`app.jobs`), above
only `app.db`: neither has to reach up into the other to load data, and nothing else knows
where bytes live."""
