// Placeholder entry point: the action is built in its own issue.
import * as core from "@actions/core";

core.setFailed("tokensmith: the action is not built yet");
