/** GET /: what this service is and where to start, for a person or an agent that only knows the address. */
import { Module } from '@nestjs/common';
import { FaviconController } from './favicon.controller';
import { IndexController } from './index.controller';

@Module({ controllers: [IndexController, FaviconController] })
export class IndexModule {}
