"""The deployment files (docker-compose.yml, Dockerfile, .env.example), checked without Docker."""
