"""Reading and writing stored data (array chunks, a dataset's features and ground truth, a run's
frozen side information). Below both the use cases (`app.services`) and the job runner
(`app.jobs`), above only `app.db`: neither has to reach up into the other to load data."""
