"""The app's shell: the navigation, the sidebar and model picker, the session a page gets, the URL state, the language, how a chart is shown (presentation) and the words per model shape."""
